package emailsurface

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/smtp"
	"net/textproto"
	"time"
)

// SMTP is the server messages are submitted to.
type SMTP struct {
	Addr     string // host:port
	Username string // with Password: PLAIN authentication after STARTTLS
	Password string
	// Opportunistic sends in plaintext to a server that offers no
	// STARTTLS (never with credentials, unless the server is loopback);
	// otherwise such a server gets no message.
	Opportunistic bool
	// TLS is the STARTTLS configuration; nil: verify the server's
	// certificate for Addr's host.
	TLS *tls.Config
	// Timeout bounds one message's whole exchange (default 30s).
	Timeout time.Duration
}

// DefaultSMTPTimeout bounds one message's exchange with the server.
const DefaultSMTPTimeout = 30 * time.Second

// errNoStartTLS is a server that offers no STARTTLS while it is required:
// permanent until the server or the configuration changes.
var errNoStartTLS = errors.New("the SMTP server offers no STARTTLS, and email.smtp.starttls is required")

// send submits msg from from to rcpt in one bounded exchange.
func (s SMTP) send(ctx context.Context, from, rcpt string, msg []byte) error {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultSMTPTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", s.Addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	host, _, err := net.SplitHostPort(s.Addr)
	if err != nil {
		return err
	}
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Hello("localhost"); err != nil {
		return err
	}
	if ok, _ := c.Extension("STARTTLS"); ok {
		cfg := s.TLS
		if cfg == nil {
			cfg = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
		}
		if err := c.StartTLS(cfg); err != nil {
			return fmt.Errorf("STARTTLS: %w", err)
		}
	} else if !s.Opportunistic {
		return errNoStartTLS
	}
	if s.Username != "" {
		// smtp.PlainAuth refuses to send credentials unencrypted to any
		// server but a loopback one.
		if err := c.Auth(smtp.PlainAuth("", s.Username, s.Password, host)); err != nil {
			return fmt.Errorf("SMTP authentication: %w", err)
		}
	}
	if err := c.Mail(from); err != nil {
		return err
	}
	if err := c.Rcpt(rcpt); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(msg); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

// permanentSMTP reports whether err is the server refusing for good (5xx):
// a bad recipient or sender, or a refused login.
func permanentSMTP(err error) bool {
	var tp *textproto.Error
	return errors.As(err, &tp) && tp.Code >= 500 && tp.Code < 600
}
