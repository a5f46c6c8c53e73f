package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEWalkthroughPeople: the README's walkthrough signs in as one
// person and invites another. It once signed up as "You" and invited its
// own address, so the invite mail read "You invited you to You's
// organization".
func TestREADMEWalkthroughPeople(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	admins := regexp.MustCompile(`SERVICE_INITIAL_ADMIN_EMAILS=(\S+)`).FindAllStringSubmatch(readme, -1)
	invited := regexp.MustCompile(`"email":"([^"]+)","role"`).FindAllStringSubmatch(readme, -1)
	names := regexp.MustCompile(`"display_name":"([^"]+)"`).FindAllStringSubmatch(readme, -1)
	if len(admins) == 0 || len(invited) == 0 || len(names) == 0 {
		t.Fatalf("the walkthrough's people not found: admins %v, invited %v, names %v", admins, invited, names)
	}
	for _, a := range admins {
		for _, i := range invited {
			if strings.EqualFold(a[1], i[1]) {
				t.Errorf("the walkthrough invites its own admin %s", i[1])
			}
		}
	}
	for _, n := range names {
		if p := strings.ToLower(n[1]); p == "you" || p == "me" || p == "admin" {
			t.Errorf("a display name %q reads badly in mails (%q invited you to %q's organization)", n[1], n[1], n[1])
		}
	}
}
