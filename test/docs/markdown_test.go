package docs

import (
	"reflect"
	"testing"
)

func TestParseBlocks(t *testing.T) {
	page := "# t\n\n<!-- test: run -->\n```sh\nmake demo\n```\ntext\n```yaml\na: 1\n```\n"
	got, err := ParseBlocks(page)
	if err != nil {
		t.Fatal(err)
	}
	want := []Block{{Lang: "sh", Mode: "run", Text: "make demo\n", Line: 4}, {Lang: "yaml", Text: "a: 1\n", Line: 8}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if _, err := ParseBlocks("```sh\nopen\n"); err == nil {
		t.Fatal("an unclosed block was accepted")
	}
}

func TestCommands(t *testing.T) {
	tests := []struct {
		script string
		want   [][]string
	}{
		{"make demo   # comment\n", [][]string{{"make", "demo"}}},
		{"helm install x \\\n  --set a=b\n", [][]string{{"helm", "install", "x", "--set", "a=b"}}},
		{"sed -e 's#^a#b#' f | kubectl apply -f -\n", [][]string{{"sed", "-e", "s#^a#b#", "f"}, {"kubectl", "apply", "-f", "-"}}},
		{"cd x && go run . -p '{\"a\": 1}'; echo ok\n", [][]string{{"cd", "x"}, {"go", "run", ".", "-p", `{"a": 1}`}, {"echo", "ok"}}},
	}
	for _, tt := range tests {
		got, err := Commands(tt.script)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Commands(%q) = %q, want %q", tt.script, got, tt.want)
		}
	}
	if _, err := Commands("echo 'open\n"); err == nil {
		t.Error("an unclosed quote was accepted")
	}
}

func TestFlags(t *testing.T) {
	got := Flags([]string{"helm", "--set=a=b", "-f", "-", "-1", "--wait"})
	if want := []string{"--set", "-f", "--wait"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
