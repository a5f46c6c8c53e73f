package resources_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// s3Server answers HeadBucket as S3 does for path-style requests, after
// checking the request's Signature V4 with its own implementation of the
// algorithm (itself checked against AWS's published example below): 403
// for an unknown key or a wrong signature, 301 with the bucket's region
// for a request signed for another region, 404 for no such bucket.
type s3Server struct {
	keys    map[string]string // access key id → secret access key
	buckets map[string]string // bucket → region
	valid   atomic.Int32      // requests whose signature held
}

func (s *s3Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodHead {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	region, err := verifySigV4(r, s.keys, time.Now())
	if err != nil {
		w.Header().Set("X-Test-Refusal", err.Error())
		w.WriteHeader(http.StatusForbidden)
		return
	}
	s.valid.Add(1)
	bucket := strings.Trim(r.URL.Path, "/")
	home, ok := s.buckets[bucket]
	switch {
	case !ok:
		w.WriteHeader(http.StatusNotFound)
	case home != region:
		w.Header().Set("X-Amz-Bucket-Region", home)
		w.WriteHeader(http.StatusMovedPermanently)
	default:
		w.Header().Set("X-Amz-Bucket-Region", home)
		w.WriteHeader(http.StatusOK)
	}
}

// verifySigV4 checks a request's Authorization header and returns the
// region it was signed for.
func verifySigV4(r *http.Request, keys map[string]string, now time.Time) (string, error) {
	rest, ok := strings.CutPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ")
	if !ok {
		return "", errors.New("not AWS4-HMAC-SHA256")
	}
	fields := map[string]string{}
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		fields[k] = v
	}
	cred := strings.Split(fields["Credential"], "/")
	if len(cred) != 5 || cred[3] != "s3" || cred[4] != "aws4_request" {
		return "", errors.New("malformed credential")
	}
	secret, ok := keys[cred[0]]
	if !ok {
		return "", errors.New("InvalidAccessKeyId")
	}
	amzDate := r.Header.Get("X-Amz-Date")
	at, err := time.Parse("20060102T150405Z", amzDate)
	if err != nil || amzDate[:8] != cred[1] || now.Sub(at).Abs() > 15*time.Minute {
		return "", errors.New("RequestTimeTooSkewed")
	}
	names := strings.Split(fields["SignedHeaders"], ";")
	if !sort.StringsAreSorted(names) || !contains(names, "host") || !contains(names, "x-amz-date") || !contains(names, "x-amz-content-sha256") {
		return "", errors.New("SignedHeaders must cover host, x-amz-date and x-amz-content-sha256")
	}
	var canon strings.Builder
	canon.WriteString(r.Method + "\n" + r.URL.EscapedPath() + "\n" + r.URL.RawQuery + "\n")
	for _, n := range names {
		v := r.Header.Get(n)
		if n == "host" {
			v = r.Host
		}
		canon.WriteString(n + ":" + strings.TrimSpace(v) + "\n")
	}
	canon.WriteString("\n" + fields["SignedHeaders"] + "\n" + r.Header.Get("X-Amz-Content-Sha256"))
	sum := sha256.Sum256([]byte(canon.String()))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + strings.Join(cred[1:], "/") + "\n" + hex.EncodeToString(sum[:])
	mac := func(key []byte, data string) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(data))
		return h.Sum(nil)
	}
	k := mac([]byte("AWS4"+secret), cred[1])
	k = mac(k, cred[2])
	k = mac(k, cred[3])
	k = mac(k, "aws4_request")
	want := hex.EncodeToString(mac(k, toSign))
	if !hmac.Equal([]byte(want), []byte(fields["Signature"])) {
		return "", errors.New("SignatureDoesNotMatch")
	}
	return cred[2], nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestSigV4VerifierMatchesAWS: the test server's verifier accepts AWS's
// published example request (GET Object) and refuses it altered.
func TestSigV4VerifierMatchesAWS(t *testing.T) {
	req := func() *http.Request {
		r, _ := http.NewRequest("GET", "https://examplebucket.s3.amazonaws.com/test.txt", nil)
		r.Header.Set("Range", "bytes=0-9")
		r.Header.Set("X-Amz-Content-Sha256", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
		r.Header.Set("X-Amz-Date", "20130524T000000Z")
		r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"+
			"SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
		return r
	}
	keys := map[string]string{"AKIAIOSFODNN7EXAMPLE": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}
	at := time.Date(2013, 5, 24, 0, 5, 0, 0, time.UTC)
	if region, err := verifySigV4(req(), keys, at); err != nil || region != "us-east-1" {
		t.Fatalf("AWS's example: %q %v", region, err)
	}
	altered := req()
	altered.Header.Set("Range", "bytes=0-10")
	if _, err := verifySigV4(altered, keys, at); err == nil {
		t.Fatal("an altered request passed")
	}
	if _, err := verifySigV4(req(), keys, at.Add(time.Hour)); err == nil {
		t.Fatal("a stale request passed")
	}
}

// TestS3: a signed HEAD of the bucket.
func TestS3(t *testing.T) {
	p := newProbe(t, true)
	secret := p.secret("s3secret/" + randomHex(16))
	s3 := &s3Server{keys: map[string]string{"AKIDSLIPWAYTEST": secret}, buckets: map[string]string{"reports": "eu-test-1"}}
	srv, _ := serve(t, s3)
	host := strings.TrimPrefix(srv.URL, "http://")
	cfg := func(region, bucket, key string) obj {
		return obj{"endpoint": srv.URL, "region": region, "bucket": bucket, "access_key_id": key, "path_style": true}
	}
	p.test(p.add("s3", cfg("eu-test-1", "reports", "AKIDSLIPWAYTEST"), secret), true, "HTTP 200 from "+host, "reports")
	if s3.valid.Load() != 1 {
		t.Fatalf("%d requests passed the signature check, want 1", s3.valid.Load())
	}
	p.test(p.add("s3", cfg("eu-test-1", "reports", "AKIDSLIPWAYTEST"), p.secret("wrong/"+randomHex(16))), false, "HTTP 403", "refused")
	p.test(p.add("s3", cfg("eu-test-1", "reports", "AKIDUNKNOWN"), secret), false, "HTTP 403")
	p.test(p.add("s3", cfg("eu-test-1", "invoices", "AKIDSLIPWAYTEST"), secret), false, "HTTP 404", "no bucket invoices")
	p.test(p.add("s3", cfg("us-east-1", "reports", "AKIDSLIPWAYTEST"), secret), false, "region eu-test-1")
	p.bad("POST", "/api/resources/"+p.add("s3", cfg("eu-test-1", "reports", "AKIDSLIPWAYTEST"), "")+"/test", "secret access key")
}
