// Package runtime is the agent side of the stdio protocol: the code behind
// `slipway agent`, run inside an agent container. It reads the start line,
// runs the agent type it names (shell, llm or command) in the work
// directory, streams protocol lines on stdout and always ends with exactly
// one result line. docs/agent-protocol.md describes the protocol as built.
package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"slipway/internal/agents/protocol"
)

// Exit codes of Main.
const (
	ExitSuccess  = 0 // result success
	ExitFailure  = 1 // result failure (including interrupts)
	ExitBadStart = 2 // the start line was missing or unusable
)

// errInterrupted is the cancel cause of an "interrupt" line.
var errInterrupted = errors.New("interrupted")

// errHubGone is the cancel cause of the end of stdin: the process that
// started the agent (its hub or runner) keeps stdin open for as long as it
// listens, so the end means it is gone. The agent stops its work and exits
// without a result: nobody is left to read one, and a worker that later
// finds the agent's remains must run the work again rather than take a
// result the agent never finished.
var errHubGone = errors.New("stdin closed: the hub or runner that started this agent is gone")

// ExitHubGone is the exit code of an agent stopped because its hub went
// away (as a shell reports a job stopped by an interrupt).
const ExitHubGone = 130

// agent is one agent type's run.
type agent interface {
	// run does the work and returns the result summary, or an error that
	// becomes the failure result's error.
	run(ctx context.Context) (summary string, err error)
}

// intervener is an agent that takes human messages while it runs.
type intervener interface {
	intervene(text string, seq int64)
}

// stepper is an agent that works in steps: an interrupt stops the current
// step (not the run), and it may ask approval before a step.
type stepper interface {
	interrupt()
	approval(protocol.Approval)
}

// Main runs one agent: the first stdin line is the start line, later lines
// are control messages (interrupt, message, approval). Protocol lines go to
// stdout, diagnostics to stderr. It returns the process exit code.
func Main(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	out := &lineOut{w: stdout}
	pw := protocol.NewWriter(out)
	log := slog.New(slog.NewTextHandler(stderr, nil)).With("component", "slipway-agent")

	in := readLines(stdin)
	defer in.stop()

	finish := func(summary string, err error, code int) int {
		res := protocol.Result{Type: protocol.OutResult, Status: protocol.ResultSuccess, Summary: summary}
		if err != nil {
			res.Status, res.Error = protocol.ResultFailure, err.Error()
			var ee *exitError
			if errors.As(err, &ee) {
				code = ee.code
			}
		}
		res.ExitCode = &code
		if werr := pw.Send(res); werr != nil {
			log.Error("writing the result line", "err", werr)
		}
		out.close()
		log.Info("agent finished", "status", res.Status, "exit_code", code)
		return code
	}

	var line []byte
	select {
	case l, ok := <-in.lines:
		if !ok {
			if in.err != nil {
				return finish("", fmt.Errorf("malformed start line: reading stdin: %v", in.err), ExitBadStart)
			}
			// No start line at all: whoever started the agent went away before
			// saying what to do (see errHubGone). Nothing ran; no result.
			out.close()
			log.Warn("stopped without a result: stdin closed before the start line; " + errHubGone.Error())
			return ExitHubGone
		}
		line = l
	case <-ctx.Done():
		return finish("", fmt.Errorf("interrupted before the start line: %v", context.Cause(ctx)), ExitFailure)
	}
	start, err := parseStart(line)
	if err != nil {
		return finish("", fmt.Errorf("malformed start line: %w", err), ExitBadStart)
	}
	log.Info("agent starting", "agent_type", start.AgentType, "workdir", start.WorkDir, "model", start.Model)

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	summary, err := func() (summary string, err error) {
		defer func() {
			if p := recover(); p != nil {
				log.Error("agent panicked", "panic", p)
				summary, err = "", fmt.Errorf("internal error: agent panicked: %v", p)
			}
		}()
		if fi, serr := os.Stat(start.WorkDir); serr != nil {
			return "", fmt.Errorf("workdir: %w", serr)
		} else if !fi.IsDir() {
			return "", fmt.Errorf("workdir %s is not a directory", start.WorkDir)
		}
		a, err := newAgent(start, pw, out, log)
		if err != nil {
			return "", err
		}
		ctrlDone := make(chan struct{})
		defer func() { in.stop(); <-ctrlDone }()
		go func() {
			defer close(ctrlDone)
			control(in, a, start.AgentType, cancel, log)
		}()
		return a.run(runCtx)
	}()
	if err != nil {
		if errors.Is(context.Cause(runCtx), errHubGone) {
			out.close()
			log.Warn("stopped without a result: " + errHubGone.Error())
			return ExitHubGone
		}
		if runCtx.Err() != nil {
			if cause := context.Cause(runCtx); errors.Is(cause, errInterrupted) {
				err = errInterrupted
			} else {
				err = fmt.Errorf("interrupted: %v", cause)
			}
		}
		return finish("", err, ExitFailure)
	}
	return finish(summary, nil, ExitSuccess)
}

// parseStart decodes and checks the start line.
func parseStart(line []byte) (protocol.Start, error) {
	var s protocol.Start
	if err := json.Unmarshal(line, &s); err != nil {
		return s, fmt.Errorf("not a JSON object: %v", err)
	}
	if s.Type != protocol.InStart {
		return s, fmt.Errorf("type is %q, want %q", s.Type, protocol.InStart)
	}
	if s.WorkDir == "" {
		return s, errors.New("workdir is required")
	}
	switch s.AgentType {
	case protocol.AgentShell:
		if s.Prompt == "" {
			return s, errors.New("the shell agent needs a prompt (the script to run)")
		}
	case protocol.AgentCommand:
		if s.CommandTemplate == "" {
			return s, errors.New("the command agent needs a command_template")
		}
		if _, err := expandTemplate(s.CommandTemplate, s); err != nil {
			return s, err
		}
	case protocol.AgentLLM:
		switch {
		case s.Prompt == "":
			return s, errors.New("the llm agent needs a prompt")
		case s.Model == "":
			return s, errors.New("the llm agent needs a model")
		case s.BaseURL == "":
			return s, errors.New("the llm agent needs a base_url")
		}
	case "":
		return s, errors.New("agent_type is required")
	default:
		return s, fmt.Errorf("unknown agent_type %q (want shell, llm or command)", s.AgentType)
	}
	return s, nil
}

func newAgent(s protocol.Start, pw *protocol.Writer, out *lineOut, log *slog.Logger) (agent, error) {
	switch s.AgentType {
	case protocol.AgentShell:
		return &scriptAgent{what: "script", script: s.Prompt, dir: s.WorkDir, env: scrubbedEnv(os.Environ(), s),
			pw: pw, out: out, log: log}, nil
	case protocol.AgentCommand:
		script, err := expandTemplate(s.CommandTemplate, s)
		if err != nil {
			return nil, err
		}
		return &scriptAgent{what: "command", script: script, dir: s.WorkDir,
			env: commandEnv(os.Environ(), s), pw: pw, out: out, log: log}, nil
	case protocol.AgentLLM:
		return newLLMAgent(s, pw, log)
	}
	return nil, fmt.Errorf("unknown agent_type %q", s.AgentType)
}

// control handles the stdin lines after the start line until stdin ends or
// the run is over. The end of stdin stops the run: see errHubGone.
func control(in *lineReader, a agent, agentType string, cancel context.CancelCauseFunc, log *slog.Logger) {
	for {
		var line []byte
		select {
		case l, ok := <-in.lines:
			if !ok {
				if in.err != nil {
					log.Warn("reading stdin", "err", in.err)
				}
				cancel(errHubGone)
				return
			}
			line = l
		case <-in.done:
			return
		}
		var head struct {
			Type string `json:"type"`
			Text string `json:"text"`
			Seq  int64  `json:"seq"`
		}
		if err := json.Unmarshal(line, &head); err != nil {
			log.Warn("ignoring a stdin line that is not a JSON object", "err", err)
			continue
		}
		switch head.Type {
		case protocol.InInterrupt:
			log.Info("interrupt received")
			if st, ok := a.(stepper); ok {
				st.interrupt()
			} else {
				cancel(errInterrupted)
			}
		case protocol.InMessage:
			iv, ok := a.(intervener)
			switch {
			case !ok:
				log.Info("ignoring message: this agent type takes no messages", "agent_type", agentType)
			case head.Text == "":
				log.Info("ignoring message with empty text")
			default:
				iv.intervene(head.Text, head.Seq)
				log.Info("intervention queued for the next model call")
			}
		case protocol.InApproval:
			var ap protocol.Approval
			st, ok := a.(stepper)
			switch {
			case json.Unmarshal(line, &ap) != nil || ap.ID == "":
				log.Warn("ignoring a malformed approval line")
			case !ok:
				log.Info("ignoring approval: this agent type asks for none", "agent_type", agentType)
			default:
				st.approval(ap)
			}
		case protocol.InStart:
			log.Warn("ignoring a second start line")
		default:
			log.Warn("ignoring a stdin line of unknown type", "type", head.Type)
		}
	}
}

// lineReader delivers stdin lines on a channel until EOF or stop.
type lineReader struct {
	lines    chan []byte
	err      error // set before lines is closed
	done     chan struct{}
	stopOnce sync.Once
}

var errStopped = errors.New("stopped")

func readLines(r io.Reader) *lineReader {
	lr := &lineReader{lines: make(chan []byte), done: make(chan struct{})}
	go func() {
		defer close(lr.lines)
		err := protocol.Lines(r, func(b []byte) error {
			select {
			case lr.lines <- append([]byte(nil), b...):
				return nil
			case <-lr.done:
				return errStopped
			}
		})
		if err != nil && !errors.Is(err, errStopped) {
			lr.err = err
		}
	}()
	return lr
}

// stop makes the reader drop further lines. A read blocked on stdin stays
// blocked until stdin delivers or closes; the process exits anyway.
func (lr *lineReader) stop() { lr.stopOnce.Do(func() { close(lr.done) }) }

// lineOut serialises everything written to stdout: protocol lines (through
// protocol.Writer) and verbatim child lines. After close nothing more is
// written, so the result line is always the last one.
type lineOut struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

func (o *lineOut) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return 0, errors.New("agent output already closed by the result line")
	}
	return o.w.Write(p)
}

// writeLine writes one verbatim line.
func (o *lineOut) writeLine(b []byte) error {
	line := make([]byte, 0, len(b)+1)
	line = append(append(line, b...), '\n')
	_, err := o.Write(line)
	return err
}

func (o *lineOut) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
}
