package inbox

import (
	"net"
	"net/http"
	"strings"
)

// loopbackOnly refuses requests that do not come from this machine to a
// loopback name, before the session is looked at (defence in depth: a stolen
// session cookie opens nothing from another machine). The peer must be
// local: serve may listen on every interface (COUNTERSIGN_LISTEN=:8080), and
// a remote client can write any Host header. And Host must be a loopback name: a page on an
// attacker's domain that resolves to 127.0.0.1 (DNS rebinding) reaches the
// listener with its own name in Host, and would otherwise read the inbox as
// same-origin.
func loopbackOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackPeer(r.RemoteAddr) || !loopbackHost(r.Host) {
			http.Error(w, "The inbox answers only on localhost, 127.0.0.1 or [::1].", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether a Host header, with or without a port, names
// this machine's loopback interface.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackPeer reports whether the connection comes from a loopback address.
func loopbackPeer(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
