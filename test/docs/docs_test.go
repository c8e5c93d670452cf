package docs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/fedmesh/fedmesh/test/cluster"
)

// root is the repository's root directory.
func root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

type page struct {
	name   string
	blocks []Block
}

func readPages(t *testing.T) []page {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root(), "docs", "*.md"))
	if err != nil || len(files) < 5 {
		t.Fatalf("docs/*.md: %v (found %d pages)", err, len(files))
	}
	var pages []page
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := ParseBlocks(string(data))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		pages = append(pages, page{name: "docs/" + filepath.Base(f), blocks: blocks})
	}
	return pages
}

// binaries builds fedmesh's commands and the demo into one directory, for their --help.
func binaries(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/...", "./test/demo")
	cmd.Dir = root()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

func TestDocs(t *testing.T) {
	pages := readPages(t)
	bin := binaries(t)
	c := &checker{root: root(), bin: bin, help: map[string]string{}}

	t.Run("every shell block is marked and what it names exists", func(t *testing.T) {
		for _, p := range pages {
			for _, b := range p.blocks {
				where := p.name + ":" + strconv.Itoa(b.Line)
				if mode, path, ok := strings.Cut(b.Mode, " "); ok && mode == ModeSameAs {
					want, err := os.ReadFile(filepath.Join(c.root, path))
					if err != nil {
						t.Errorf("%s: %v", where, err)
					} else if string(want) != b.Text {
						t.Errorf("%s: the block differs from %s", where, path)
					}
					continue
				}
				if !b.IsShell() {
					continue
				}
				switch b.Mode {
				case ModeRun, ModeCheck, ModeNeedsDocker, ModeNeedsCluster:
				default:
					t.Errorf("%s: shell block marked %q; want <!-- test: run|check|needs-docker|needs-cluster -->", where, b.Mode)
					continue
				}
				cmds, err := Commands(b.Text)
				if err != nil {
					t.Errorf("%s: %v", where, err)
					continue
				}
				dir := c.root
				for _, words := range cmds {
					if words[0] == "cd" && len(words) == 2 {
						dir = filepath.Join(dir, words[1])
						continue
					}
					for _, problem := range c.check(dir, words) {
						t.Errorf("%s: %s: %s", where, strings.Join(words, " "), problem)
					}
				}
			}
		}
	})

	t.Run("run blocks succeed against an API server with fedmesh's CRDs", func(t *testing.T) {
		host := cluster.New(t, cluster.Options{Name: "docs"})
		ctx := context.Background()
		if err := host.InstallCRDs(ctx, filepath.Join(c.root, "charts", "fedmesh", "crds")); err != nil {
			t.Fatal(err)
		}
		// The examples' namespaces exist, as they would where someone follows the docs.
		for _, ns := range exampleNamespaces(t, filepath.Join(c.root, "docs", "examples")) {
			_, err := host.Clientset().CoreV1().Namespaces().Create(ctx,
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
		}
		path := bin + string(os.PathListSeparator) + cluster.DefaultBinDir() + string(os.PathListSeparator) + os.Getenv("PATH")
		ran := 0
		for _, p := range pages {
			for _, b := range p.blocks {
				if !b.IsShell() || b.Mode != ModeRun {
					continue
				}
				cmd := exec.Command("bash", "-euo", "pipefail", "-c", b.Text)
				cmd.Dir = c.root
				cmd.Env = append(os.Environ(), "PATH="+path, "KUBECONFIG="+host.Kubeconfig())
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Errorf("%s:%d: %v\n%s", p.name, b.Line, err, out)
				}
				ran++
			}
		}
		if ran < 5 {
			t.Errorf("ran %d blocks; the docs have fewer run blocks than expected", ran)
		}
	})
}

// exampleNamespaces are the namespaces of the objects in dir's YAML files.
func exampleNamespaces(t *testing.T, dir string) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, doc := range strings.Split(string(data), "\n---\n") {
			var obj struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name      string `json:"name"`
					Namespace string `json:"namespace"`
				} `json:"metadata"`
			}
			if yaml.Unmarshal([]byte(doc), &obj) != nil {
				continue // a list of statuses, not an object
			}
			if obj.Metadata.Namespace != "" {
				seen[obj.Metadata.Namespace] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for ns := range seen {
		out = append(out, ns) // applying a Namespace that exists only updates it
	}
	return out
}

// checker checks that what a command names exists.
type checker struct {
	root, bin string
	help      map[string]string // by command line
}

var ownBinaries = map[string]bool{"kubectl-fedmesh": true, "proxy": true, "manager": true, "federator": true}

func (c *checker) check(dir string, words []string) []string {
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		words = words[1:] // VAR=value
	}
	if len(words) == 0 {
		return nil
	}
	name := words[0]
	switch {
	case name == "make":
		return c.checkMake(words[1:])
	case name == "kubectl" && len(words) > 1 && words[1] == "fedmesh":
		return c.checkOwn("kubectl-fedmesh", words[2:])
	case ownBinaries[filepath.Base(name)]:
		return c.checkOwn(filepath.Base(name), words[1:])
	case name == "go" && len(words) > 2 && words[1] == "run" && words[2] == "./test/demo":
		return c.checkFlags([]string{filepath.Join(c.bin, "demo"), "-help"}, words[3:])
	case name == "helm":
		return c.checkHelm(words[1:])
	case strings.Contains(name, "/"):
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode()&0o111 == 0 {
			return []string{name + " is no executable file"}
		}
	}
	return c.checkFiles(dir, words)
}

var targetRE = regexp.MustCompile(`(?m)^([a-zA-Z0-9_.-]+):`)

func (c *checker) checkMake(args []string) []string {
	data, err := os.ReadFile(filepath.Join(c.root, "Makefile"))
	if err != nil {
		return []string{err.Error()}
	}
	targets := map[string]bool{}
	for _, m := range targetRE.FindAllStringSubmatch(string(data), -1) {
		targets[m[1]] = true
	}
	var problems []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") && !strings.Contains(a, "=") && !targets[a] {
			problems = append(problems, "the Makefile has no target "+a)
		}
	}
	return problems
}

// checkOwn checks a fedmesh binary's command line: kubectl-fedmesh's subcommand, and every flag, against --help.
func (c *checker) checkOwn(name string, args []string) []string {
	line := []string{filepath.Join(c.bin, name)}
	if name == "kubectl-fedmesh" {
		subs := c.helpText(line[0], "--help")
		for _, a := range args {
			if !strings.HasPrefix(a, "-") && regexp.MustCompile(`(?m)^  `+regexp.QuoteMeta(a)+`\s`).MatchString(subs) {
				line = append(line, a)
				break
			}
		}
		if len(line) == 1 {
			return []string{"names no kubectl-fedmesh subcommand that exists"}
		}
	}
	return c.checkFlags(append(line, "--help"), args)
}

func (c *checker) checkFlags(helpCmd []string, args []string) []string {
	help := c.helpText(helpCmd...)
	var problems []string
	for _, f := range Flags(args) {
		if !regexp.MustCompile(`(^|[\s,])--?` + regexp.QuoteMeta(strings.TrimLeft(f, "-")) + `\b`).MatchString(help) {
			problems = append(problems, "no flag "+f+" in `"+filepath.Base(helpCmd[0])+" "+strings.Join(helpCmd[1:], " ")+"`")
		}
	}
	return problems
}

func (c *checker) helpText(cmdline ...string) string {
	key := strings.Join(cmdline, " ")
	if h, ok := c.help[key]; ok {
		return h
	}
	out, _ := exec.Command(cmdline[0], cmdline[1:]...).CombinedOutput() // flag's -help exits 2
	c.help[key] = string(out)
	return string(out)
}

// checkHelm checks the chart of `helm install|upgrade` and that every --set names a value of its values.yaml.
func (c *checker) checkHelm(args []string) []string {
	var problems []string
	var values map[string]any
	for _, a := range args {
		if strings.HasPrefix(a, "charts/") {
			if _, err := os.Stat(filepath.Join(c.root, a, "Chart.yaml")); err != nil {
				return []string{"no chart at " + a}
			}
			data, err := os.ReadFile(filepath.Join(c.root, a, "values.yaml"))
			if err == nil {
				err = yaml.Unmarshal(data, &values)
			}
			if err != nil {
				return []string{a + "/values.yaml: " + err.Error()}
			}
		}
	}
	for i, a := range args {
		if a != "--set" || i+1 == len(args) {
			continue
		}
		for _, kv := range strings.Split(args[i+1], ",") {
			key, _, _ := strings.Cut(kv, "=")
			if !hasPath(values, strings.Split(key, ".")) {
				problems = append(problems, "the chart has no value "+key)
			}
		}
	}
	return problems
}

func hasPath(m map[string]any, path []string) bool {
	v, ok := m[path[0]]
	if !ok || len(path) == 1 {
		return ok
	}
	sub, _ := v.(map[string]any)
	return sub != nil && hasPath(sub, path[1:])
}

// checkFiles checks that the files given with -f and the repository paths a command names exist.
func (c *checker) checkFiles(dir string, words []string) []string {
	var problems []string
	for i, w := range words {
		file := ""
		switch {
		case (w == "-f" || w == "--filename") && i+1 < len(words) && words[i+1] != "-":
			file = words[i+1]
		case strings.HasPrefix(w, "docs/") || strings.HasPrefix(w, "hack/") || strings.HasPrefix(w, "charts/"):
			file = w
		}
		if file == "" || strings.Contains(file, "://") {
			continue
		}
		if matches, _ := filepath.Glob(filepath.Join(dir, file)); len(matches) == 0 {
			problems = append(problems, "no file "+file)
		}
	}
	return problems
}
