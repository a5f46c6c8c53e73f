package resources

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// testPostgres signs in with the stored password, reads the server's
// version from the session's parameters and pings it.
func (t *target) testPostgres(ctx context.Context) (*ResourceTest, error) {
	c, err := configOf[PostgreSQLConfig](t.res)
	if err != nil {
		return nil, err
	}
	if err := t.needSecret(); err != nil {
		return nil, err
	}
	if err := t.checkHost(c.Host); err != nil {
		return nil, err
	}
	cfg, err := t.pgConfig(c)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(c.Host, fmt.Sprint(cfg.Port))
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return t.failed("%s", describePG(addr, err))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	version := strings.Fields(conn.PgConn().ParameterStatus("server_version"))
	if err := conn.Ping(ctx); err != nil {
		return t.failed("signed in to %s, but the session does not answer: %s", addr, describePG(addr, err))
	}
	v := "PostgreSQL"
	if len(version) > 0 {
		v += " " + version[0]
	}
	return t.ok("signed in to %s at %s as %s (database %s, sslmode %s)", v, addr, c.User, c.Database, sslMode(c))
}

func sslMode(c PostgreSQLConfig) string {
	if c.SSLMode == "" {
		return "require"
	}
	return c.SSLMode
}

// pgConfig builds the connection's config from the resource alone. pgx's
// parser would fill gaps from the server's environment and home directory
// (PG* variables, a service file, client certificates): every field that
// could come from there is set here.
func (t *target) pgConfig(c PostgreSQLConfig) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig("sslmode=disable")
	if err != nil {
		return nil, fmt.Errorf("postgresql config: %w", err)
	}
	port := c.Port
	if port == 0 {
		port = 5432
	}
	cfg.Host, cfg.Port = strings.Trim(c.Host, "[]"), uint16(port)
	cfg.Database, cfg.User, cfg.Password = c.Database, c.User, t.secret
	cfg.Fallbacks = nil
	cfg.ValidateConnect = nil
	cfg.RuntimeParams = map[string]string{"application_name": "slipway connection test"}
	cfg.SSLNegotiation = ""
	cfg.RequireAuth = ""
	cfg.ChannelBinding = "prefer"
	cfg.MinProtocolVersion, cfg.MaxProtocolVersion = "3.0", "3.0"
	cfg.KerberosSrvName, cfg.KerberosSpn = "", ""
	cfg.ConnectTimeout = testTimeout
	cfg.DialFunc = t.dial
	cfg.TLSConfig = pgTLS(sslMode(c), cfg.Host)
	return cfg, nil
}

// pgTLS is libpq's meaning of an sslmode: disable none, require encrypted
// without checking the certificate, verify-ca a certificate of a trusted
// authority, verify-full one for the host too. No client certificate.
func pgTLS(mode, host string) *tls.Config {
	switch mode {
	case "disable":
		return nil
	case "verify-full":
		return &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	case "verify-ca":
		return &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12, InsecureSkipVerify: true,
			VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
				if len(raw) == 0 {
					return errors.New("the server sent no certificate")
				}
				certs := make([]*x509.Certificate, len(raw))
				for i, r := range raw {
					cert, err := x509.ParseCertificate(r)
					if err != nil {
						return err
					}
					certs[i] = cert
				}
				inter := x509.NewCertPool()
				for _, c := range certs[1:] {
					inter.AddCert(c)
				}
				_, err := certs[0].Verify(x509.VerifyOptions{Intermediates: inter})
				return err
			}}
	default: // require
		return &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12, InsecureSkipVerify: true}
	}
}

// describePG says why a connection failed: the server's own refusal, or
// the network's.
func describePG(addr string, err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return fmt.Sprintf("PostgreSQL at %s refused: %s (SQLSTATE %s)", addr, pe.Message, pe.Code)
	}
	// pgconn's ConnectError names user and database before the cause, and
	// each address's failure starts with the address again.
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) && errors.Unwrap(ce) != nil {
		err = errors.Unwrap(ce)
	}
	return fmt.Sprintf("could not connect to PostgreSQL at %s: %s", addr, pgAddress.ReplaceAllString(describe(err), ""))
}

// pgAddress is the "address (host name): " pgconn puts before the failure
// of one address.
var pgAddress = regexp.MustCompile(`(?m)^\S+ \([^()\s]*\): `)
