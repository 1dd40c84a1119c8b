// Package servetest builds countersign from this tree and starts it as a
// real process, for the tests that need one: to kill it at a dangerous
// point, to restart it, to drive it from another language's SDK.
//
// A package using it runs its tests through Main, which removes the binary
// at the end:
//
//	func TestMain(m *testing.M) { servetest.Main(m) }
//
//	p := servetest.Start(t, "COUNTERSIGN_DATABASE_URL="+storetest.NewURL(t))
//	resp, err := http.Get(p.URL + "/healthz")
//
// Start waits for serve's "listening" log line, so the process answers
// when it returns; the test's end kills it, and a failed test logs what it
// wrote.
package servetest
