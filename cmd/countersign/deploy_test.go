package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/executor"
)

// The systemd unit passes systemd-analyze verify with nothing to say: an
// unknown or misspelt directive is a warning there, so any output fails.
func TestSystemdUnitVerifies(t *testing.T) {
	t.Parallel()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatalf("checking deploy/systemd needs systemd-analyze (Debian's systemd package): %v", err)
	}
	unit, err := os.ReadFile("../../deploy/systemd/countersign.service")
	if err != nil {
		t.Fatal(err)
	}
	// verify checks that ExecStart's binary exists: point it at one that does.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(unit, []byte("ExecStart=/usr/local/bin/countersign serve")) {
		t.Fatal("the unit no longer starts /usr/local/bin/countersign serve")
	}
	unit = bytes.Replace(unit, []byte("/usr/local/bin/countersign"), []byte(self), -1)
	path := filepath.Join(t.TempDir(), "countersign.service")
	if err := os.WriteFile(path, unit, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// manifest is the part of a Kubernetes object these checks read.
type manifest struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	StringData map[string]string `yaml:"stringData"`
	Data       map[string]string `yaml:"data"`
	Spec       struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type podSpec struct {
	SecurityContext struct {
		RunAsNonRoot bool `yaml:"runAsNonRoot"`
	} `yaml:"securityContext"`
	TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
	Containers                    []struct {
		Image     string   `yaml:"image"`
		Args      []string `yaml:"args"`
		Lifecycle struct {
			PreStop struct {
				Sleep struct {
					Seconds int `yaml:"seconds"`
				} `yaml:"sleep"`
			} `yaml:"preStop"`
		} `yaml:"lifecycle"`
		Ports []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		Env []struct {
			Name      string `yaml:"name"`
			Value     string `yaml:"value"`
			ValueFrom struct {
				SecretKeyRef struct {
					Name string `yaml:"name"`
					Key  string `yaml:"key"`
				} `yaml:"secretKeyRef"`
			} `yaml:"valueFrom"`
		} `yaml:"env"`
		ReadinessProbe probe `yaml:"readinessProbe"`
		LivenessProbe  probe `yaml:"livenessProbe"`
	} `yaml:"containers"`
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

func readManifests(t *testing.T) map[string]manifest {
	t.Helper()
	files, err := filepath.Glob("../../deploy/kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/kubernetes: %v", err)
	}
	byKind := map[string]manifest{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		for {
			var m manifest
			if err := dec.Decode(&m); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if _, dup := byKind[m.Kind]; dup {
				t.Fatalf("two %s objects; this test reads one of each", m.Kind)
			}
			byKind[m.Kind] = m
		}
	}
	return byKind
}

// The example Kubernetes manifests agree with each other and with serve:
// the configuration in the ConfigMap loads and validates with the Secret's
// values, every secret reference names a key the Secret has, the probes
// reach the admin listener where serve serves them, the migration Job's
// arguments parse, and the PodDisruptionBudget selects the Deployment's pods.
func TestKubernetesManifestsAgree(t *testing.T) {
	t.Parallel()
	m := readManifests(t)
	for _, kind := range []string{"Secret", "ConfigMap", "Job", "Deployment", "Service", "PodDisruptionBudget"} {
		if _, ok := m[kind]; !ok {
			t.Fatalf("deploy/kubernetes has no %s", kind)
		}
	}
	secret, deployment, job := m["Secret"], m["Deployment"], m["Job"]

	env := map[string]string{}
	pods := map[string]podSpec{"Deployment": deployment.Spec.Template.Spec, "Job": job.Spec.Template.Spec}
	for kind, pod := range pods {
		if !pod.SecurityContext.RunAsNonRoot {
			t.Errorf("the %s's pods may run as root", kind)
		}
		for _, c := range pod.Containers {
			for _, e := range c.Env {
				ref := e.ValueFrom.SecretKeyRef
				if ref.Key == "" {
					continue
				}
				v, ok := secret.StringData[ref.Key]
				if ref.Name != secret.Metadata.Name || !ok {
					t.Errorf("the %s's %s refers to %s/%s, which the Secret does not hold", kind, e.Name, ref.Name, ref.Key)
				}
				if kind == "Deployment" {
					env[e.Name] = v
				}
			}
		}
	}
	if img := job.Spec.Template.Spec.Containers[0].Image; img != deployment.Spec.Template.Spec.Containers[0].Image {
		t.Errorf("the migration Job runs %s, the Deployment another image", img)
	}
	if _, code, ok := parseMigrateArgs(job.Spec.Template.Spec.Containers[0].Args[1:], io.Discard, io.Discard); !ok || job.Spec.Template.Spec.Containers[0].Args[0] != "migrate" {
		t.Errorf("the migration Job's arguments %v do not parse (%d)", job.Spec.Template.Spec.Containers[0].Args, code)
	}

	serve := deployment.Spec.Template.Spec.Containers[0]
	ports := map[string]int{}
	for _, p := range serve.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for _, e := range serve.Env {
		if e.Value != "" {
			env[e.Name] = e.Value
		}
	}
	admin := env["COUNTERSIGN_ADMIN_LISTEN"]
	for _, p := range []probe{serve.ReadinessProbe, serve.LivenessProbe} {
		path, port := p.HTTPGet.Path, p.HTTPGet.Port
		if path != "/readyz" && path != "/healthz" {
			t.Errorf("a probe asks %s, which serve does not serve", path)
		}
		if want := ":" + strconv.Itoa(ports[port]); port == "" || admin != want {
			t.Errorf("a probe reaches port %q (%d), but COUNTERSIGN_ADMIN_LISTEN is %q", port, ports[port], admin)
		}
	}

	// The ConfigMap's file, loaded as serve would load it in the pod: as
	// shipped, serve refuses its placeholders, saying how to make each;
	// with a token's hash and a secret of one's own, it starts.
	file := m["ConfigMap"].Data["countersign.yml"]
	path := filepath.Join(t.TempDir(), "countersign.yml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	env["COUNTERSIGN_CONFIG"] = path
	shipped, err := config.Load(envFrom(env))
	if err != nil {
		t.Fatal(err)
	}
	err = shipped.Validate()
	for _, want := range []string{"agents[0].token_sha256 is the example's placeholder: make one with TOKEN=$(openssl rand -hex 32)",
		"COUNTERSIGN_DISPATCH_SECRET is shorter than 32 bytes, and serve listens on :8080, beyond this machine: make one with openssl rand -hex 32"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the shipped ConfigMap and Secret: no %q in:\n%v", want, err)
		}
	}
	if !strings.Contains(file, config.PlaceholderHash) {
		t.Fatalf("the ConfigMap's token_sha256 is not the placeholder %q", config.PlaceholderHash)
	}
	sum := sha256.Sum256([]byte(strings.Repeat("t", 64)))
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(file, config.PlaceholderHash, hex.EncodeToString(sum[:]))), 0o600); err != nil {
		t.Fatal(err)
	}
	env["COUNTERSIGN_DISPATCH_SECRET"] = strings.Repeat("d", 64)
	cfg, err := config.Load(envFrom(env))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("the ConfigMap's configuration, its placeholders filled in, does not validate:\n%v", err)
	}
	if cfg.AdminListen != admin || cfg.DatabaseURL == "" {
		t.Errorf("serve in the pod would listen for admin on %q with database %q", cfg.AdminListen, cfg.DatabaseURL)
	}

	// A stopping pod is taken out of the endpoints while it still serves,
	// and is not killed before serve has drained and stopped: the grace
	// period covers the preStop sleep, the drain and the longest shutdown.
	preStop := time.Duration(serve.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	if preStop <= 0 {
		t.Error("the Deployment has no preStop sleep: a pod would stop serving before its removal from the endpoints reached every node")
	}
	grace := time.Duration(deployment.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	if need := preStop + cfg.DrainDelay() + longestStop(t, cfg); grace < need {
		t.Errorf("terminationGracePeriodSeconds is %v; the preStop sleep (%v), the drain (%v) and the longest shutdown need %v",
			grace, preStop, cfg.DrainDelay(), need)
	}

	pdb := m["PodDisruptionBudget"]
	for k, v := range pdb.Spec.Selector.MatchLabels {
		if deployment.Spec.Template.Metadata.Labels[k] != v {
			t.Errorf("the PodDisruptionBudget selects %s=%s, which the Deployment's pods do not carry", k, v)
		}
	}
}

// longestStop is the most serve can take, from the end of the drain, to
// stop with any tools: the executor's grace at its cap, or the HTTP server's
// and the parked long-polls', or the callbacks' timeout, whichever is longer.
func longestStop(t *testing.T, cfg *config.Config) time.Duration {
	t.Helper()
	longest := max(executor.MaxShutdownGrace, httpShutdownTimeout+parkedAnswerGrace)
	if c := cfg.File.Callbacks.Timeout; c > longest {
		longest = c
	}
	return longest
}

// The systemd unit waits for serve's drain and its longest shutdown before
// it kills the process, and says so.
func TestSystemdUnitWaitsForTheDrainAndTheShutdown(t *testing.T) {
	t.Parallel()
	unit, err := os.ReadFile("../../deploy/systemd/countersign.service")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^TimeoutStopSec=(\S+)$`).FindSubmatch(unit)
	if m == nil {
		t.Fatal("the unit sets no TimeoutStopSec")
	}
	stop, err := time.ParseDuration(string(m[1]))
	if err != nil {
		t.Fatalf("TimeoutStopSec=%s: %v", m[1], err)
	}
	cfg := &config.Config{ConfigPath: "/etc/countersign/countersign.yml"}
	if set := regexp.MustCompile(`(?m)^Environment=COUNTERSIGN_DRAIN_DELAY=(\S*)$`).FindSubmatch(unit); set != nil {
		cfg.DrainDelaySetting = string(set[1])
	}
	if need := cfg.DrainDelay() + longestStop(t, cfg); stop < need {
		t.Errorf("TimeoutStopSec is %v; the drain (%v) and the longest shutdown need %v", stop, cfg.DrainDelay(), need)
	}
}

// The image builds the binary as make release does (static, -trimpath, the
// version stamped) and runs it as a non-root user, without a shell, with
// its admin listener on the port it exposes.
func TestDockerfileBuildsAsReleasesDo(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	release, err := os.ReadFile("../../scripts/release")
	if err != nil {
		t.Fatal(err)
	}
	docker := string(raw)
	for _, flag := range []string{"CGO_ENABLED=0", "-trimpath", `-ldflags "-s -w -X main.version=`} {
		if !strings.Contains(docker, flag) || !strings.Contains(string(release), flag) {
			t.Errorf("the Dockerfile and scripts/release do not both build with %s", flag)
		}
	}
	stages := strings.Split(docker, "\nFROM ")
	final := stages[len(stages)-1]
	if !regexp.MustCompile(`(?m)^USER [1-9][0-9]*:[1-9][0-9]*$`).MatchString(final) {
		t.Error("the final stage does not run as a numeric non-root user")
	}
	if !strings.HasPrefix(final, "gcr.io/distroless/static") {
		t.Errorf("the final stage is %q, want a distroless static base (no shell)", strings.SplitN(final, "\n", 2)[0])
	}
	if strings.Contains(final, "\nRUN ") || !strings.Contains(final, `ENTRYPOINT ["/usr/local/bin/countersign"]`) {
		t.Error("the final stage runs a shell: it must RUN nothing and use the exec form")
	}
	if !strings.Contains(final, "COUNTERSIGN_ADMIN_LISTEN=:9090") || !strings.Contains(final, "EXPOSE 8080 9090") {
		t.Error("the image does not expose the admin listener it sets")
	}
}
