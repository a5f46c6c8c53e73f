package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"slipway/internal/agents/protocol"
)

// scriptAgent runs the shell agent's script or the command agent's expanded
// command template with /bin/sh -c. The child's stdout lines pass through
// verbatim (so a script can speak the protocol itself; plain lines become log
// events in the hub), except a "result" line: the runtime writes the only
// result. Each stderr line becomes a message line with role "stderr", so it
// reaches the event log in order and can never be mistaken for a protocol
// line. The exit code decides the result.
type scriptAgent struct {
	what   string // "script" or "command", for summaries and errors
	script string
	dir    string
	env    []string
	pw     *protocol.Writer
	out    *lineOut
	log    *slog.Logger
}

func (a *scriptAgent) run(ctx context.Context) (string, error) {
	var (
		mu         sync.Mutex
		child      *protocol.Result
		lastStderr string
	)
	p := process{
		script: a.script,
		dir:    a.dir,
		env:    a.env,
		stdout: func(b []byte) {
			if protocol.ParseLine(b).Type == protocol.OutResult {
				// ParseLine saw a JSON object; a field of the wrong type is
				// skipped and the rest still counts.
				var r protocol.Result
				if err := json.Unmarshal(b, &r); err != nil {
					a.log.Warn("the "+a.what+"'s result line does not parse in full", "err", err)
				}
				mu.Lock()
				child = &r
				mu.Unlock()
				a.log.Info("the " + a.what + " printed a result line; its summary and error are kept, its exit code decides the status")
				return
			}
			if err := a.out.writeLine(b); err != nil {
				a.log.Warn("writing a "+a.what+" output line", "err", err)
			}
		},
		stderr: func(b []byte) {
			text := string(b)
			mu.Lock()
			lastStderr = text
			mu.Unlock()
			if err := a.pw.Send(protocol.Message{Type: protocol.OutMessage, Role: protocol.RoleStderr, Text: text}); err != nil {
				a.log.Warn("writing a "+a.what+" stderr line", "err", err)
			}
		},
	}
	ps, err := p.run(ctx)
	if err != nil {
		return "", err
	}
	if ps.ExitCode() == 0 {
		if child != nil && child.Summary != "" {
			return child.Summary, nil
		}
		return a.what + " exited with code 0", nil
	}
	msg := a.what + " failed with " + exitText(ps)
	switch {
	case child != nil && child.Error != "":
		msg += ": " + child.Error
	case lastStderr != "":
		msg += "; last stderr line: " + truncate(lastStderr, 300)
	}
	return "", &exitError{msg: msg, code: exitCode(ps)}
}

// exitError is a failure whose exit code the agent passes on as its own, so
// the run records the script's code rather than the agent's generic one.
type exitError struct {
	msg  string
	code int
}

func (e *exitError) Error() string { return e.msg }

// exitCode is the shell's code for how a child ended: its exit code, or
// 128 plus the signal that killed it.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return ExitFailure
	}
	if c := ps.ExitCode(); c > 0 && c < 256 {
		return c
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ExitFailure
}

// shellQuote quotes s for /bin/sh in single quotes; an embedded single
// quote closes the quoting, is written escaped, and reopens it.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// expandTemplate substitutes {prompt}, {model}, {workdir} and
// {instructions} in a command template, each shell-quoted, in one pass (a
// value containing a placeholder is not expanded again). A placeholder
// inside quotes in the template is refused: the value would be quoted twice,
// and inside double quotes $(...) in it would run.
func expandTemplate(tmpl string, s protocol.Start) (string, error) {
	placeholders := []struct{ name, value string }{
		{"{prompt}", s.Prompt}, {"{model}", s.Model}, {"{workdir}", s.WorkDir}, {"{instructions}", s.Instructions},
	}
	const (
		plain = iota
		single
		double
	)
	state := plain
	var b strings.Builder
next:
	for i := 0; i < len(tmpl); {
		c := tmpl[i]
		if c == '{' {
			for _, p := range placeholders {
				if strings.HasPrefix(tmpl[i:], p.name) {
					if state != plain {
						return "", fmt.Errorf("command_template: placeholder %s is inside quotes; write it bare, it is shell-quoted for you", p.name)
					}
					b.WriteString(shellQuote(p.value))
					i += len(p.name)
					continue next
				}
			}
		}
		switch {
		case c == '\\' && state != single && i+1 < len(tmpl):
			b.WriteString(tmpl[i : i+2]) // an escaped character is literal
			i += 2
			continue
		case c == '\'' && state == plain:
			state = single
		case c == '\'' && state == single:
			state = plain
		case c == '"' && state == plain:
			state = double
		case c == '"' && state == double:
			state = plain
		}
		b.WriteByte(c)
		i++
	}
	return b.String(), nil
}

// truncate cuts s to at most n bytes (on a rune boundary), marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
