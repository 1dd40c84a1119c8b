package main

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// envProcess, when set, makes the test binary run fakeprovider with the
// arguments it holds.
const envProcess = "FAKEPROVIDER_TEST_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(envProcess); args != "" {
		os.Args = append([]string{os.Args[0]}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestSignalAnswersTheWritesHeld signals the provider while it holds a
// write, as a SIGTERM to the process group that runs serve and the provider
// together does (make run, a script's kill 0). The write is answered before
// the provider exits: closing its connection would turn it into an unknown
// outcome at countersign, which a human then has to settle.
func TestSignalAnswersTheWritesHeld(t *testing.T) {
	t.Parallel()
	const hold = 2 * time.Second
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envProcess+"=-listen 127.0.0.1:0 -secret= -delay "+hold.String())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var exitErr error
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	listening := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(stderr)
		for scanner.Scan() {
			if _, addr, ok := strings.Cut(scanner.Text(), "fake provider on "); ok {
				listening <- addr
			}
		}
		exitErr = cmd.Wait()
		close(exited)
	}()
	var base string
	select {
	case base = <-listening:
	case <-time.After(30 * time.Second):
		t.Fatal("the provider never listened")
	}

	client := &http.Client{Timeout: 30 * time.Second}
	answered := make(chan error, 1)
	sent := time.Now()
	go func() {
		req, _ := http.NewRequest(http.MethodPost, base+"/credits", strings.NewReader(`{"amount_cents":700}`))
		req.Header.Set("Idempotency-Key", "k-held")
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				err = &statusError{resp.StatusCode}
			}
		}
		answered <- err
	}()
	// The write is stored before it is held: its verify URL finds it.
	for deadline := time.Now().Add(10 * time.Second); ; {
		resp, err := client.Get(base + "/objects?key=k-held")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the write never arrived")
		}
		time.Sleep(10 * time.Millisecond) // polling the verify URL, not waiting for an event
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-answered; err != nil {
		t.Fatalf("the write held at the signal was not answered: %v", err)
	}
	if took := time.Since(sent); took < hold {
		t.Errorf("the write was answered after %v, before its delay of %v", took, hold)
	}
	select {
	case <-exited:
		if exitErr != nil {
			t.Errorf("the provider exited with %v", exitErr)
		}
	case <-time.After(10 * time.Second):
		t.Error("the provider did not exit after answering")
	}
}

type statusError struct{ status int }

func (e *statusError) Error() string { return "answered " + http.StatusText(e.status) }
