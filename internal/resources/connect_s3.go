package resources

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"sort"
	"strings"
	"time"
)

// AWS Signature Version 4, the header form, for the S3 test's one request.
// https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html

// emptySHA256 is the hash of an empty payload.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// sigV4 signs requests with one key for one region and service.
type sigV4 struct {
	accessKey, secretKey, region, service string
}

// sign returns the headers that authenticate a request: X-Amz-Date,
// X-Amz-Content-Sha256 and Authorization. headers are further headers the
// request sends and the signature covers (the host is always covered, as
// u.Host).
func (k sigV4) sign(method string, u *url.URL, headers map[string]string, payloadHash string, at time.Time) map[string]string {
	at = at.UTC()
	amzDate := at.Format("20060102T150405Z")
	day := at.Format("20060102")

	signed := map[string]string{"host": u.Host, "x-amz-date": amzDate, "x-amz-content-sha256": payloadHash}
	for name, v := range headers {
		signed[strings.ToLower(name)] = strings.Join(strings.Fields(v), " ")
	}
	names := make([]string, 0, len(signed))
	for n := range signed {
		names = append(names, n)
	}
	sort.Strings(names)
	var canonHeaders strings.Builder
	for _, n := range names {
		canonHeaders.WriteString(n + ":" + signed[n] + "\n")
	}
	signedNames := strings.Join(names, ";")

	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	canonical := strings.Join([]string{method, path, canonicalQuery(u.Query()), canonHeaders.String(), signedNames, payloadHash}, "\n")

	scope := day + "/" + k.region + "/" + k.service + "/aws4_request"
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hexSHA256(canonical)
	key := hmacSHA256([]byte("AWS4"+k.secretKey), day)
	for _, part := range []string{k.region, k.service, "aws4_request"} {
		key = hmacSHA256(key, part)
	}
	sig := hex.EncodeToString(hmacSHA256(key, toSign))
	return map[string]string{
		"X-Amz-Date":           amzDate,
		"X-Amz-Content-Sha256": payloadHash,
		"Authorization": "AWS4-HMAC-SHA256 Credential=" + k.accessKey + "/" + scope +
			", SignedHeaders=" + signedNames + ", Signature=" + sig,
	}
}

// canonicalQuery sorts the parameters by name, then value, each
// URI-encoded the AWS way.
func canonicalQuery(q url.Values) string {
	var pairs []string
	for name, values := range q {
		for _, v := range values {
			pairs = append(pairs, awsEscape(name)+"="+awsEscape(v))
		}
	}
	sort.Strings(pairs)
	return strings.Join(pairs, "&")
}

// awsEscape percent-encodes all but A-Z, a-z, 0-9, '-', '.', '_' and '~'.
func awsEscape(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

func hexSHA256(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// s3BucketURL is where the bucket is addressed: {endpoint}/{bucket} in
// path style, {bucket}.{endpoint host} otherwise.
func s3BucketURL(c S3Config) (*url.URL, error) {
	endpoint := c.Endpoint
	if endpoint == "" {
		endpoint = "https://s3." + c.Region + ".amazonaws.com"
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}
	u.RawQuery, u.Fragment, u.RawPath, u.User = "", "", "", nil
	base := strings.TrimSuffix(u.Path, "/")
	if c.PathStyle {
		u.Path = base + "/" + c.Bucket
	} else {
		u.Host = c.Bucket + "." + u.Host
		u.Path = base + "/"
	}
	return u, nil
}

// testS3: a signed HEAD of the bucket; ok on 200.
func (t *target) testS3(ctx context.Context) (*ResourceTest, error) {
	c, err := configOf[S3Config](t.res)
	if err != nil {
		return nil, err
	}
	if err := t.needSecret(); err != nil {
		return nil, err
	}
	u, err := s3BucketURL(c)
	if err != nil {
		return nil, t.bad("config.endpoint is not a URL")
	}
	headers := sigV4{accessKey: c.AccessKeyID, secretKey: t.secret, region: c.Region, service: "s3"}.
		sign("HEAD", u, nil, emptySHA256, time.Now())
	resp, err := t.call(ctx, "HEAD", u.String(), headers, nil)
	if err != nil {
		return t.unreachable(u.Host, err)
	}
	region := resp.Headers["X-Amz-Bucket-Region"]
	switch st := resp.Status; {
	case st == 200:
		return t.ok("HTTP 200 from %s: the bucket %s is there and the key may use it", u.Host, c.Bucket)
	case region != "" && region != c.Region:
		return t.failed("HTTP %d from %s: the bucket %s is in region %s, not %s", st, u.Host, c.Bucket, region, c.Region)
	case st == 403:
		return t.failed("HTTP 403 from %s: the access key, its secret or its permissions on %s were refused", u.Host, c.Bucket)
	case st == 404:
		return t.failed("HTTP 404 from %s: no bucket %s", u.Host, c.Bucket)
	case st == 301 || st == 307:
		return t.failed("HTTP %d from %s: the bucket %s is served elsewhere (another region or endpoint)", st, u.Host, c.Bucket)
	default:
		return t.failed("HTTP %d from %s for the bucket %s", st, u.Host, c.Bucket)
	}
}
