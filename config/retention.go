package config

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"
)

// RetentionConfig says how long a settled request is kept before the
// retention sweep prunes it, leaving its key as a tombstone, and how long
// the audit trail is kept before whole months of it are dropped. Each
// unset keeps everything, as before retention existed. VerifySchedule,
// when set, has serve verify the audit trail on that schedule (see
// auditVerifier); AnchorSchedule has it take an anchor of the trail, to
// AnchorFile or else to the log (see auditAnchorer).
type RetentionConfig struct {
	Requests       Window `yaml:"requests"`
	Audit          Window `yaml:"audit"`
	Schedule       string `yaml:"schedule"`
	VerifySchedule string `yaml:"verify_schedule"`
	AnchorSchedule string `yaml:"anchor_schedule"`
	AnchorFile     string `yaml:"anchor_file"`
}

// Window is a retention window: a Go duration (36h, 90s) or whole days
// (90d). It is at least MinWindow.
type Window time.Duration

// MinWindow is the shortest window accepted (so tests can use seconds);
// serve warns below ShortWindow.
const (
	MinWindow   = time.Second
	ShortWindow = 24 * time.Hour
)

const DefaultRetentionSchedule = "@every 10m"

var windowType = reflect.TypeFor[Window]()

// ParseWindow reads a window: whole days written as 90d, or any Go
// duration, of MinWindow or more.
func ParseWindow(s string) (time.Duration, error) {
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 100*365 {
			return 0, fmt.Errorf("%q is not a window; write it like 90d, 36h or 30s", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%q is not a window; write it like 90d, 36h or 30s", s)
		}
	}
	if d < MinWindow {
		return 0, fmt.Errorf("%q is shorter than %s", s, MinWindow)
	}
	return d, nil
}

// UnmarshalYAML reads a window (ParseWindow). One it cannot read is left
// zero without an error: checkYAML has reported it at its line, and an
// error here would stop the decoding of the rest of the file, whose
// problems Validate reports too.
func (w *Window) UnmarshalYAML(n *yaml.Node) error {
	d, _ := ParseWindow(n.Value)
	*w = Window(d)
	return nil
}

// MarshalYAML writes a window as the file would: whole days as 90d, any
// other as a Go duration (config check prints it so).
func (w Window) MarshalYAML() (any, error) {
	d := time.Duration(w)
	if d == 0 {
		return nil, nil // unset: config check leaves it out
	}
	if day := 24 * time.Hour; d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d", nil
	}
	return d.String(), nil
}

// Validate reports a schedule that is not a cron schedule, and an audit
// window shorter than the requests' one: the audit trail tells what
// happened to the requests still there, so it outlives them; a request
// whose events were gone could no longer be checked against its history.
// The windows were checked, at their lines, as the file was read.
func (r RetentionConfig) Validate() error {
	parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	if _, err := parser.Parse(r.Schedule); err != nil {
		return fmt.Errorf("retention.schedule %q is not a cron schedule (use a 5-field spec or @every 10m): %v", r.Schedule, err)
	}
	if r.VerifySchedule != "" {
		if _, err := parser.Parse(r.VerifySchedule); err != nil {
			return fmt.Errorf("retention.verify_schedule %q is not a cron schedule (use a 5-field spec or @daily): %v", r.VerifySchedule, err)
		}
	}
	if r.AnchorSchedule != "" {
		if _, err := parser.Parse(r.AnchorSchedule); err != nil {
			return fmt.Errorf("retention.anchor_schedule %q is not a cron schedule (use a 5-field spec or @daily): %v", r.AnchorSchedule, err)
		}
	}
	if r.AnchorFile != "" && r.AnchorSchedule == "" {
		return errors.New("retention.anchor_file is set without retention.anchor_schedule: say when serve takes the anchor")
	}
	if r.Audit != 0 && r.Requests != 0 && r.Audit < r.Requests {
		return fmt.Errorf("retention.audit (%s) is shorter than retention.requests (%s): the audit trail must outlive the requests it tells of",
			time.Duration(r.Audit), time.Duration(r.Requests))
	}
	return nil
}
