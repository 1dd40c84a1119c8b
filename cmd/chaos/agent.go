package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

const agentToken = "chaos-agent-token"

// intent is one valid intent the agent sent, and what countersign answered
// once it was acknowledged.
type intent struct {
	Body        string
	Tool        string
	Token       string // the agent's bearer token
	Channel     string // where its card goes, when not the chaos channel
	ID          string `json:"id"`
	Key         string `json:"key"`
	PayloadHash string `json:"payload_hash"`
	Verdict     string // approve, reject or wait (left pending for reminders)
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

// post sends body to /v1/requests on base as the agent of token; status 0
// means no answer (the replica died, or is down).
func post(base, token, body string) (int, []byte) {
	req, err := http.NewRequest(http.MethodPost, base+"/v1/requests", strings.NewReader(body))
	if err != nil {
		return 0, nil
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// validIntent is the n-th valid intent for tool.
func validIntent(run string, n int, tool string) string {
	return fmt.Sprintf(`{"run_id":"%s","step":%d,"tool":"%s","effect":{"invoice":"inv_%d","amount_cents":%d,"currency":"EUR"},"summary":"Credit %d cents"}`,
		run, n, tool, n, 100+n, 100+n)
}

// poisons are intents that must be refused, never stored: each kind's
// body, with a run id of its own so a stored one would show.
var poisons = map[string]func(n int) string{
	"nul in a text field": func(n int) string {
		return fmt.Sprintf(`{"run_id":"poison-nul-%d","step":1,"tool":"chaos.keyed","effect":{"invoice":"inv\u0000x"},"summary":"a\u0000b"}`, n)
	},
	"deep nesting": func(n int) string {
		deep := strings.Repeat(`{"a":`, 200) + "1" + strings.Repeat("}", 200)
		return fmt.Sprintf(`{"run_id":"poison-deep-%d","step":1,"tool":"chaos.keyed","effect":%s,"summary":"deep"}`, n, deep)
	},
	"huge number": func(n int) string {
		return fmt.Sprintf(`{"run_id":"poison-huge-%d","step":1,"tool":"chaos.keyed","effect":{"amount_cents":1e400},"summary":"huge"}`, n)
	},
	"invalid UTF-8": func(n int) string {
		return fmt.Sprintf(`{"run_id":"poison-utf8-%d","step":1,"tool":"chaos.keyed","effect":{"invoice":"inv_%d"},"summary":"bad `+"\xff\xfe"+` bytes"}`, n, n)
	},
	"duplicate members": func(n int) string {
		return fmt.Sprintf(`{"run_id":"poison-dup-%d","step":1,"tool":"chaos.keyed","effect":{"amount_cents":1,"amount_cents":2},"summary":"dup"}`, n)
	},
}

// errorCode is the code of an error answer.
func errorCode(body []byte) string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
		Code string `json:"code"`
	}
	_ = json.Unmarshal(body, &e)
	if e.Error.Code != "" {
		return e.Error.Code
	}
	return e.Code
}

// compact keeps a body short in a message.
func compact(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 200 {
		b = append(b[:200:200], "…"...)
	}
	return string(b)
}
