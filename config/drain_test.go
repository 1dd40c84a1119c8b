package config

import (
	"strings"
	"testing"
	"time"
)

// COUNTERSIGN_DRAIN_DELAY: 5s by default with a configuration file, none for
// the local run, any duration from 0 to a minute when set; anything else is
// refused at start, naming the variable.
func TestDrainDelaySetting(t *testing.T) {
	t.Parallel()
	cfgFile := writeConfig(t, "agents: []\ntools: {}\n")
	for _, row := range []struct {
		file, setting string
		want          time.Duration
		refused       bool
	}{
		{file: cfgFile, want: DefaultDrainDelay},
		{file: "", want: 0},
		{file: cfgFile, setting: "0", want: 0},
		{file: cfgFile, setting: "1500ms", want: 1500 * time.Millisecond},
		{file: "", setting: "3s", want: 3 * time.Second},
		{file: cfgFile, setting: "1m", want: time.Minute},
		{file: cfgFile, setting: "61s", refused: true},
		{file: cfgFile, setting: "-1s", refused: true},
		{file: cfgFile, setting: "5", refused: true},
		{file: cfgFile, setting: "soon", refused: true},
	} {
		cfg := &Config{ConfigPath: row.file, DrainDelaySetting: row.setting}
		errs := cfg.validateDrainDelay()
		if row.refused {
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), "COUNTERSIGN_DRAIN_DELAY") {
				t.Errorf("COUNTERSIGN_DRAIN_DELAY=%q: %v, want it refused by name", row.setting, errs)
			}
			continue
		}
		if len(errs) != 0 {
			t.Errorf("COUNTERSIGN_DRAIN_DELAY=%q refused: %v", row.setting, errs)
		}
		if got := cfg.DrainDelay(); got != row.want {
			t.Errorf("COUNTERSIGN_DRAIN_DELAY=%q with file %q: %v, want %v", row.setting, row.file, got, row.want)
		}
	}
}
