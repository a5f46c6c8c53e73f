package resources

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestSigV4AWSExample: the signer reproduces AWS's published example
// (GET Object, https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html).
func TestSigV4AWSExample(t *testing.T) {
	u, _ := url.Parse("https://examplebucket.s3.amazonaws.com/test.txt")
	h := sigV4{accessKey: "AKIAIOSFODNN7EXAMPLE", secretKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", region: "us-east-1", service: "s3"}.
		sign("GET", u, map[string]string{"Range": "bytes=0-9"}, emptySHA256, time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC))
	want := "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, " +
		"SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
	if h["Authorization"] != want || h["X-Amz-Date"] != "20130524T000000Z" || h["X-Amz-Content-Sha256"] != emptySHA256 {
		t.Fatalf("signed headers %v", h)
	}
	if got := canonicalQuery(url.Values{"b": {"2 3"}, "a": {"x/y", "1"}}); got != "a=1&a=x%2Fy&b=2%203" {
		t.Fatalf("canonical query %q", got)
	}
}

func TestS3BucketURL(t *testing.T) {
	for _, tc := range []struct {
		c    S3Config
		want string
	}{
		{S3Config{Region: "eu-west-1", Bucket: "reports"}, "https://reports.s3.eu-west-1.amazonaws.com/"},
		{S3Config{Region: "eu-west-1", Bucket: "reports", PathStyle: true}, "https://s3.eu-west-1.amazonaws.com/reports"},
		{S3Config{Endpoint: "http://minio.internal:9000/", Region: "us-east-1", Bucket: "b1", PathStyle: true}, "http://minio.internal:9000/b1"},
		{S3Config{Endpoint: "https://store.example/s3?x=1", Region: "us-east-1", Bucket: "b1"}, "https://b1.store.example/s3/"},
	} {
		u, err := s3BucketURL(tc.c)
		if err != nil || u.String() != tc.want {
			t.Errorf("%+v: %v %v, want %s", tc.c, u, err, tc.want)
		}
	}
}

// TestClean: a message keeps no secret (raw or escaped), no URL beyond
// scheme and host, no control characters, and is bounded.
func TestClean(t *testing.T) {
	tg := &target{}
	tg.hide("s3cr3t/v@lue", "abc")
	for in, want := range map[string]string{
		"GET https://user:pw@api.example.com:8443/v1/x?token=1#f failed": "GET https://api.example.com:8443 failed",
		"postgres://reader:pw@db.internal/app?sslmode=disable":           "postgres://db.internal",
		"key s3cr3t/v@lue and s3cr3t%2Fv@lue and s3cr3t%2Fv%40lue":       "key [REDACTED] and [REDACTED] and [REDACTED]",
		"short abc secret":          "short [REDACTED] secret",
		"line\r\nInjected:\x00 yes": "line Injected: yes",
	} {
		if got := tg.clean(in); got != want {
			t.Errorf("clean(%q) = %q, want %q", in, got, want)
		}
	}
	if got := tg.clean(strings.Repeat("x", 2000)); len([]rune(got)) != maxMessageRunes {
		t.Errorf("a long message keeps %d runes", len([]rune(got)))
	}
}

func TestFolderSegments(t *testing.T) {
	for in, want := range map[string]string{"": "", "/": "", "a": "a", "/a/b/": "a|b", "a/My Docs": "a|My Docs"} {
		segs, err := folderSegments(in)
		if err != nil || strings.Join(segs, "|") != want {
			t.Errorf("%q: %v %v", in, segs, err)
		}
	}
	for _, in := range []string{"..", "../a", "a/..", "a/./b", "a//b", "//", "a\x00b", strings.Repeat("a", 1025)} {
		if _, err := folderSegments(in); err == nil {
			t.Errorf("%q passed", in)
		}
	}
}

func TestDescribe(t *testing.T) {
	dns := &net.DNSError{Err: "no such host", Name: "db.example", Server: "10.255.255.53:53", IsNotFound: true}
	if got := describe(fmt.Errorf("dial: %w", dns)); got != "the name db.example does not resolve" {
		t.Errorf("a DNS failure: %q", got)
	}
	if got := describe(errors.New("outbound: GET https://x.example: boom")); got != "GET https://x.example: boom" {
		t.Errorf("an outbound failure: %q", got)
	}
}

func TestIMAPMailboxName(t *testing.T) {
	if n, ok := imapMailboxName("Archive & more"); !ok || n != "Archive &- more" {
		t.Errorf("ASCII: %q %v", n, ok)
	}
	if _, ok := imapMailboxName("Entwürfe"); ok {
		t.Error("a non-ASCII name is sent unencoded")
	}
}
