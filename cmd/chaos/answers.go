package main

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// answerBook classifies every HTTP answer the load gets, retried ones too:
// by route, status and error code. A 5xx other than 503 `unavailable` is an
// answer countersign never owes, fault or no fault: each fails the run.
type answerBook struct {
	classes map[string]int // "intake 201", "click 200", "intake 503 unavailable", "replay no answer"…
	bad     int
	samples []string
}

// answer records one answer to what (intake, replay, poison, click);
// status 0 is no answer (the replica died, or is down).
func (r *run) answer(what string, status int, body []byte) {
	class := fmt.Sprintf("%s %d", what, status)
	switch {
	case status == 0:
		class = what + " no answer"
	case status >= 400:
		if code := errorCode(body); code != "" {
			class += " " + code
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.answers.classes == nil {
		r.answers.classes = map[string]int{}
	}
	r.answers.classes[class]++
	if r.connLimited && status == http.StatusServiceUnavailable && errorCode(body) == "unavailable" {
		r.connRefused++
	}
	if status >= 500 && !(status == http.StatusServiceUnavailable && errorCode(body) == "unavailable") {
		r.answers.bad++
		if len(r.answers.samples) < 3 {
			r.answers.samples = append(r.answers.samples, fmt.Sprintf("%s: %s", class, compact(body)))
		}
	}
}

// answerFigures checks the book and lists it.
func (r *run) answerFigures(f *Figures) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f.check("answers 5xx other than 503 unavailable", r.answers.bad, 0)
	for _, s := range r.answers.samples {
		f.note("a 5xx answer", "%s", s)
	}
	var classes []string
	for c, n := range r.answers.classes {
		classes = append(classes, fmt.Sprintf("%s ×%d", c, n))
	}
	sort.Strings(classes)
	f.note("answers by class", "%s", strings.Join(classes, "; "))
}
