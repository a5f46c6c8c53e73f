package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"slipway/internal/buildinfo"
	"slipway/internal/config"
	"slipway/internal/instance"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/datadir"
	"slipway/internal/platform/db"
	"slipway/migrations"
)

// NewLogger returns the process logger: text in dev, JSON in production.
func NewLogger(cfg *config.Config, out *os.File) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.IsProd() {
		return slog.New(slog.NewJSONHandler(out, opts))
	}
	return slog.New(slog.NewTextHandler(out, opts))
}

// Boot prepares everything a serving process needs: data directory, signing
// secret, database and migrations. Errors name what to fix.
func Boot(ctx context.Context, cfg *config.Config, log *slog.Logger) (*db.DB, error) {
	for _, n := range cfg.Notices {
		log.Warn(n)
	}
	if !cfg.IsProd() {
		log.Info("dev mode: production guards are off (set MODE=prod for production)")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("SERVICE_DATA_DIR: cannot create %s: %w", cfg.DataDir, err)
	}
	// The server's alone, whatever made it (the process backend's jobs get
	// no way into it either way).
	if err := os.Chmod(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("SERVICE_DATA_DIR: %w", err)
	}
	generated, err := cfg.ResolveJWTSecret()
	if err != nil {
		return nil, err
	}
	if generated {
		log.Info("dev mode: generated a signing secret and kept it in the data dir", "file", config.DevSecretFile)
	}
	if generated, err := cfg.ResolveInstanceID(); err != nil {
		return nil, err
	} else if generated {
		log.Info("generated this server's identity and kept it in the data dir", "instance_id", cfg.InstanceID, "file", config.InstanceIDFile)
	}

	openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	d, err := db.Open(openCtx, cfg.Database)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	log.Info("database open", "target", cfg.Database.String())
	if err := privateFiles(cfg.DataDir); err != nil {
		d.Close()
		return nil, fmt.Errorf("SERVICE_DATA_DIR: %w", err)
	}

	m := d.NewMigrations(migrations.FS, log)
	if cfg.SkipBootMigrations {
		st, err := m.Verify(ctx)
		if err != nil {
			d.Close()
			return nil, err
		}
		log.Info("migrations verified (boot migrations skipped)", "applied", len(st.Applied), "newer_than_binary", st.Newer)
	} else {
		applied, err := m.Up(ctx)
		if err != nil {
			d.Close()
			return nil, err
		}
		log.Info("migrations up to date", "applied_now", len(applied))
	}

	b, err := instance.RecordBoot(ctx, d, buildinfo.Version, clock.System{}.Now())
	if err != nil {
		d.Close()
		return nil, err
	}
	switch {
	case b.First:
		log.Info("first boot of this instance", "version", buildinfo.Version)
	case b.PreviousVersion != buildinfo.Version:
		log.Info("version changed since the last boot", "from", b.PreviousVersion, "to", buildinfo.Version)
	}
	return d, nil
}

// TLSConfig loads the certificate, key and optional client CA. With a client
// CA the server requests a client certificate and verifies any it is given;
// clients without one (browsers) still connect, and routes that need one
// (runners) check r.TLS themselves.
func TLSConfig(t config.TLS) (*tls.Config, error) {
	if !t.Enabled() {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(t.CertPath, t.KeyPath)
	if err != nil {
		return nil, fmt.Errorf("SERVICE_TLS_CERT_PATH/SERVICE_TLS_KEY_PATH: %w", err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if t.ClientCAPath != "" {
		pem, err := os.ReadFile(t.ClientCAPath)
		if err != nil {
			return nil, fmt.Errorf("SERVICE_TLS_CLIENT_CA_PATH: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("SERVICE_TLS_CLIENT_CA_PATH: %s holds no PEM certificate", t.ClientCAPath)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}

// Run boots and serves until ctx ends, then shuts down gracefully.
func Run(ctx context.Context, cfg *config.Config, log *slog.Logger, hard <-chan struct{}) error {
	tlsCfg, err := TLSConfig(cfg.TLS)
	if err != nil {
		return err
	}
	unlock, err := datadir.Lock(cfg.DataDir)
	if err != nil {
		return err
	}
	defer unlock()
	d, err := Boot(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer d.Close()

	ln, err := net.Listen("tcp", net.JoinHostPort(strings.Trim(cfg.ListenAddr, "[]"), strconv.Itoa(cfg.Port)))
	if err != nil {
		return fmt.Errorf("SERVER_PORT, SERVICE_LISTEN_ADDR: %w", err)
	}
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
	}
	log.Info("listening", "addr", ln.Addr().String(), "scheme", scheme, "mutual_tls", cfg.TLS.ClientCAPath != "",
		"version", buildinfo.Version, "mode", cfg.Mode, "instance_id", cfg.InstanceID)
	s, err := New(cfg, log, d)
	if err != nil {
		ln.Close()
		return err
	}
	stopObserving, err := s.observeProcess(ctx) // metrics listener, trace exporter
	if err != nil {
		ln.Close()
		return err
	}
	defer stopObserving()
	err = s.Serve(ctx, ln, tlsCfg, hard)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// privateFiles makes the files at the top of the data directory (the
// database and its journal, the signing secret, the identity) readable by
// the server's user only; SQLite's journal files take the database's mode.
func privateFiles(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := os.Chmod(filepath.Join(dir, e.Name()), 0o600); err != nil {
			return err
		}
	}
	return nil
}
