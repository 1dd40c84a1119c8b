package hook

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/countersign/countersign/internal/requestid"
)

// connResponse is a response written by hand on a connection taken from
// the HTTP server (a parked long-poll's). The handlers write it as they
// write any response; writeTo then sends it as net/http would have, with
// Content-Length, Date and Connection: close, since nothing reads the
// connection's next request.
type connResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

var _ http.ResponseWriter = (*connResponse)(nil)

func newConnResponse(requestID string) *connResponse {
	c := &connResponse{header: http.Header{}}
	c.header.Set(requestid.Header, requestID)
	return c
}

func (c *connResponse) Header() http.Header { return c.header }

func (c *connResponse) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}

func (c *connResponse) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return c.body.Write(b)
}

// answerWriteTimeout bounds the write of an answer to a parked connection.
const answerWriteTimeout = 10 * time.Second

// writeTo sends the response on conn in one write. Nothing is sent when
// nothing was written (a handler's 499: no one to answer).
func (c *connResponse) writeTo(conn net.Conn) error {
	if c.status == 0 {
		return nil
	}
	c.header.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	c.header.Set("Content-Length", strconv.Itoa(c.body.Len()))
	c.header.Set("Connection", "close")
	var out bytes.Buffer
	out.Grow(256 + c.body.Len())
	out.WriteString("HTTP/1.1 " + strconv.Itoa(c.status) + " " + http.StatusText(c.status) + "\r\n")
	if err := c.header.Write(&out); err != nil {
		return err
	}
	out.WriteString("\r\n")
	out.Write(c.body.Bytes())
	if err := conn.SetWriteDeadline(time.Now().Add(answerWriteTimeout)); err != nil {
		return err
	}
	_, err := io.Copy(conn, &out)
	return err
}
