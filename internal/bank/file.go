package bank

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// File is the connection without one: each submitted batch is written to
// Dir as <message id>.pain001.xml for a person to upload at the bank, and
// its status report, once the bank gives it, is put next to it as <message
// id>.pain002.xml for reconcile to read. It never asks for a TAN (the
// bank's own upload does).
type File struct {
	Dir string
}

var fileRef = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,34}$`)

func (f File) path(ref, kind string) (string, error) {
	if !fileRef.MatchString(ref) {
		return "", fmt.Errorf("bank: %q is not a batch's message id", ref)
	}
	return filepath.Join(f.Dir, ref+"."+kind+".xml"), nil
}

// Submit writes the batch's file (atomically, readable by the server's
// user only); submitting the same batch again writes the same file.
func (f File) Submit(_ context.Context, messageID string, pain001 []byte) (string, *BankChallenge, error) {
	p, err := f.path(messageID, "pain001")
	if err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		return "", nil, fmt.Errorf("bank: %w", err)
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, pain001, 0o600); err != nil {
		return "", nil, fmt.Errorf("bank: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return "", nil, fmt.Errorf("bank: %w", err)
	}
	return messageID, nil, nil
}

// ConfirmTAN: a file is uploaded with the bank's own confirmation.
func (File) ConfirmTAN(context.Context, string, string, string) error {
	return fmt.Errorf("%w: a file batch has no TAN challenge", ErrRefused)
}

// Status reads the status report put next to the batch; without one every
// transfer is pending.
func (f File) Status(_ context.Context, ref string) (map[string]Result, error) {
	p, err := f.path(ref, "pain002")
	if err != nil {
		return nil, err
	}
	info, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]Result{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("bank: %w", err)
	}
	if info.Size() > maxReport {
		return nil, fmt.Errorf("bank: the status report is larger than %d bytes", maxReport)
	}
	doc, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("bank: %w", err)
	}
	return ParseStatusReport(doc)
}

// Cancel withdraws the file (renamed .cancelled): whoever uploads batches
// sees it is not to be uploaded. Once a status report is there, the bank
// has it: refused.
func (f File) Cancel(_ context.Context, ref string) error {
	p, err := f.path(ref, "pain001")
	if err != nil {
		return err
	}
	if report, _ := f.path(ref, "pain002"); fileExists(report) {
		return fmt.Errorf("%w: the bank reported on batch %s already", ErrRefused, ref)
	}
	if err := os.Rename(p, p+".cancelled"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("bank: %w", err)
	}
	return nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
