package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// docBlock is one fenced code block of docs/shim-service.md.
type docBlock struct{ info, body string }

// serviceDoc returns the guide's fenced code blocks, in order.
func serviceDoc(t *testing.T) []docBlock {
	t.Helper()
	b, err := os.ReadFile("../../docs/shim-service.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []docBlock
	rest := string(b)
	for {
		_, after, ok := strings.Cut(rest, "```")
		if !ok {
			return blocks
		}
		info, after, _ := strings.Cut(after, "\n")
		body, next, ok := strings.Cut(after, "```")
		if !ok {
			t.Fatal("docs/shim-service.md: an unclosed code block")
		}
		blocks = append(blocks, docBlock{info, body})
		rest = next
	}
}

// serviceDocBlock returns the guide's only block of info string info
// whose body contains marker.
func serviceDocBlock(t *testing.T, info, marker string) string {
	t.Helper()
	var found []string
	for _, b := range serviceDoc(t) {
		if b.info == info && strings.Contains(b.body, marker) {
			found = append(found, b.body)
		}
	}
	if len(found) != 1 {
		t.Fatalf("docs/shim-service.md has %d ```%s blocks with %q, want 1", len(found), info, marker)
	}
	return found[0]
}

// serviceDocCommands returns the lines of the guide's sh blocks.
func serviceDocCommands(t *testing.T) []string {
	t.Helper()
	var lines []string
	for _, b := range serviceDoc(t) {
		if b.info != "sh" {
			continue
		}
		for _, l := range strings.Split(b.body, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
		}
	}
	return lines
}

// TestServiceDocCommands (issue 28 item 5): the guide's commands, from a
// directory laid out as the clone's top with /etc/tcpsig moved there: the
// go build and tcpsig commands run as written (keys gen makes the host's
// 0600 keys file, keys check finds it sound); install, systemctl and
// journalctl name only files of the tree and the units contrib/systemd
// has; the shim's command line is the unit's (TestShimNotify runs it, and
// the guide's curl); tcpsig shim -uninstall is the uninstall unit's.
func TestServiceDocCommands(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	unitShim := strings.Join(shimUnitArgs(t, readUnit(t, "tcpsig-shim.service")), " ")
	unitUninstall := strings.Join(shimUnitArgs(t, readUnit(t, "tcpsig-shim-uninstall.service")), " ")
	if got := strings.TrimSpace(serviceDocBlock(t, "", "/usr/local/bin/tcpsig shim ")); got != "/usr/local/bin/tcpsig "+unitShim {
		t.Errorf("the guide shows the unit's command as\n%s\nthe unit runs\n/usr/local/bin/tcpsig %s", got, unitShim)
	}
	commands := serviceDocCommands(t)
	inClone(t)
	etc := filepath.Join(t.TempDir(), "etc-tcpsig")
	ran := map[string]int{}
	for _, line := range commands {
		args := shellWords(t, strings.ReplaceAll(line, "/etc/tcpsig", etc))
		switch args[0] {
		case "go":
			if testing.Short() {
				t.Logf("-short: %s not run", line)
				continue
			}
			if strings.Join(args, " ") != "go build -o tcpsig ./cmd/tcpsig" {
				t.Fatalf("guide: %q: only go build -o tcpsig ./cmd/tcpsig is expected", line)
			}
			cmd := exec.Command("go", "build", "-o", filepath.Join(t.TempDir(), "tcpsig"), "./cmd/tcpsig")
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("guide: %s: %v\n%s", line, err, out)
			}
		case "tcpsig":
			if args[1] == "shim" {
				if strings.Join(args[1:], " ") != unitUninstall {
					t.Errorf("guide: %q is not the uninstall unit's tcpsig %s", line, unitUninstall)
				}
				ran["uninstall"]++
				continue // TestShimNotify runs it in the shim's namespace
			}
			code, out, errOut := cli(t, args[1:]...)
			if code != 0 {
				t.Errorf("guide: %s: exit %d\n%s%s", line, code, out, errOut)
			}
			if args[1] == "keys" && args[2] == "check" && !strings.HasSuffix(out, "ok\n") {
				t.Errorf("guide: %s finds the generated file not sound:\n%s", line, out)
			}
		case "install":
			if len(args) == 5 && args[1] == "-d" && args[4] == etc {
				if err := os.Mkdir(etc, 0o700); err != nil {
					t.Fatal(err)
				}
				continue
			}
			for _, a := range args[3 : len(args)-1] {
				if a == "tcpsig" {
					continue // what go build made
				}
				if _, err := os.Stat(filepath.Join(root, a)); err != nil {
					t.Errorf("guide: %s: %v", line, err)
				}
			}
		case "systemctl", "journalctl":
			for _, a := range args[1:] {
				if strings.HasSuffix(a, ".service") {
					if _, err := os.Stat(filepath.Join(root, "contrib/systemd", a)); err != nil {
						t.Errorf("guide: %s names a unit contrib/systemd lacks", line)
					}
				}
			}
		case "curl":
			// TestShimNotify runs it against the unit's shim
		default:
			t.Errorf("guide: %q: this test does not know how to check %s", line, args[0])
		}
		ran[args[0]]++
	}
	if ran["tcpsig"] < 2 || ran["uninstall"] != 1 || ran["curl"] != 1 || ran["systemctl"] < 4 {
		t.Errorf("the guide's commands: %v; the test no longer finds them", ran)
	}
	fi, err := os.Stat(filepath.Join(etc, "keys.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the guide's keys file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
}

// TestServiceDocPrometheus: the guide's prometheus.yml and alerting rule
// pass promtool check config (which reads the rule file it names), and
// promtool test rules shows on made-up series that the bad-MAC query sums
// per peer, the rotation alert fires only after a minute of a session
// pending, and the lifetime alert once sessions sign with a key outside
// its send lifetime; without promtool it says why and skips.
func TestServiceDocPrometheus(t *testing.T) {
	config := serviceDocBlock(t, "yaml", "scrape_configs:")
	rules := serviceDocBlock(t, "yaml", "TcpsigRotationStuck")
	badMAC := strings.TrimSpace(serviceDocBlock(t, "promql", "bad_mac"))
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not found (apt-get install prometheus): the guide's Prometheus files are not checked here")
	}
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("prometheus.yml", config)
	write("tcpsig-shim.rules.yml", rules)
	// Series as the shim exports them: one peer's key with 6 bad MACs a
	// minute, another's with none; a session pending from minute 2 on.
	write("test.yml", `rule_files:
  - tcpsig-shim.rules.yml
evaluation_interval: 15s
tests:
  - interval: 1m
    input_series:
      - series: 'tcpsig_shim_segments_total{peer="192.0.2.1/32",kind="ao",sndid="1",rcvid="2",verdict="bad_mac"}'
        values: '0+6x10'
      - series: 'tcpsig_shim_segments_total{peer="192.0.2.9/32",kind="ao",sndid="1",rcvid="1",verdict="bad_mac"}'
        values: '0+0x10'
      - series: 'tcpsig_shim_segments_total{peer="192.0.2.9/32",kind="ao",sndid="1",rcvid="1",verdict="good"}'
        values: '0+100x10'
      - series: 'tcpsig_shim_sessions_rotation_pending{peer="192.0.2.1/32"}'
        values: '0 0 1 1 1 1 1'
      - series: 'tcpsig_shim_key_sessions{peer="192.0.2.1/32",kind="ao",sndid="1",rcvid="2"}'
        values: '3 3 3 3 3 3 3'
      - series: 'tcpsig_shim_key_send_lifetime_active{peer="192.0.2.1/32",kind="ao",sndid="1",rcvid="2"}'
        values: '1 1 1 0 0 0 0'
      - series: 'tcpsig_shim_key_accept_lifetime_active{peer="192.0.2.1/32",kind="ao",sndid="1",rcvid="2"}'
        values: '1 1 1 1 1 1 1'
    promql_expr_test:
      - expr: '`+badMAC+`'
        eval_time: 10m
        exp_samples:
          - labels: '{peer="192.0.2.1/32"}'
            value: 0.1
          - labels: '{peer="192.0.2.9/32"}'
            value: 0
    alert_rule_test:
      - alertname: TcpsigRotationStuck
        eval_time: 2m
        exp_alerts: []
      - alertname: TcpsigRotationStuck
        eval_time: 4m
        exp_alerts:
          - exp_labels:
              peer: 192.0.2.1/32
            exp_annotations:
              summary: "TCP-AO sessions with 192.0.2.1/32 have not moved to the new key for a minute"
      - alertname: TcpsigKeyOutsideLifetime
        eval_time: 2m
        exp_alerts: []
      - alertname: TcpsigKeyOutsideLifetime
        eval_time: 4m
        exp_alerts:
          - exp_labels:
              peer: 192.0.2.1/32
              kind: ao
              sndid: "1"
              rcvid: "2"
            exp_annotations:
              summary: "TCP-AO sessions with 192.0.2.1/32 still use key 1/2 outside its lifetime: no newer key of the schedule to move to"
`)
	for _, args := range [][]string{{"check", "config", "prometheus.yml"}, {"test", "rules", "test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
