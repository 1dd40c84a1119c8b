package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestFloorAnswersNewThenReplayed(t *testing.T) {
	srv := httptest.NewServer(handler("tok"))
	defer srv.Close()
	post := func(token, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/requests", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := post("wrong", `{"a":1}`); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("bad token = %d, want 401", resp.StatusCode)
	}
	if resp := post("tok", `{"a":1}`); resp.StatusCode != http.StatusCreated {
		t.Errorf("first post = %d, want 201", resp.StatusCode)
	}
	if resp := post("tok", `{"a":1}`); resp.StatusCode != http.StatusOK || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay = %d %q, want 200 replayed", resp.StatusCode, resp.Header.Get("Idempotent-Replayed"))
	}
	if resp := post("tok", `{"a":2}`); resp.StatusCode != http.StatusCreated {
		t.Errorf("another body = %d, want 201", resp.StatusCode)
	}
}
