// Command mailtest runs the tests' mail system (package mailtest) as a
// program, for the browser tests: an IMAP server holding one mailbox and
// an SMTP server delivering into it, on loopback. It prints
// {"imap": "host:port", "smtp": "host:port"} on one line and runs until
// its standard input closes.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"slipway/internal/mailbox/mailtest"
)

func main() {
	user := flag.String("user", "support@example.test", "the mailbox's user name and address")
	password := flag.String("password", "", "its password")
	flag.Parse()
	if *password == "" {
		fmt.Fprintln(os.Stderr, "mailtest: -password is required")
		os.Exit(2)
	}
	s, stop, err := mailtest.Run(*user, *password, true)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mailtest:", err)
		os.Exit(1)
	}
	defer stop()
	_ = json.NewEncoder(os.Stdout).Encode(map[string]string{"imap": s.IMAPAddr, "smtp": s.SMTPAddr})
	_, _ = io.Copy(io.Discard, os.Stdin)
}
