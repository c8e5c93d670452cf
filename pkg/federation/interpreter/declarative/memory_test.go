package declarative

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
)

func TestMemoryLimit(t *testing.T) {
	tests := []struct {
		name, body string
	}{
		{"a table of big strings", `local t = {} for i = 1, 1e9 do t[i] = string.rep("x", 1000) end`},
		{"a string doubled in a global", `s = string.rep("x", 1000) for i = 1, 40 do s = s .. s end`},
		{"a local string doubled", `local s = "x" for i = 1, 60 do s = s .. s end`},
		{"nested tables held by an upvalue", `local t = {} local function add() t[#t + 1] = {a = {}, b = {}} end for i = 1, 1e9 do add() end`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := New([]configv1alpha1.ResourceInterpreterCustomization{health("hog", `
function InterpretHealth(obj)
  if obj.spec.hog then
    `+tt.body+`
  end
  return true
end`)})
			if err != nil {
				t.Fatal(err)
			}
			// The timeout is long, so that only the memory limit can stop the script in time.
			in.WithTimeout(20 * time.Second).WithMemoryLimit(16 << 20)

			start := time.Now()
			_, err = in.InterpretHealth(context.Background(), widget(map[string]any{"spec": map[string]any{"hog": true}}))
			var memErr *MemoryLimitError
			if !errors.As(err, &memErr) || !strings.Contains(err.Error(), "hog:healthInterpretation: InterpretHealth: the script holds more than 16 MiB") {
				t.Fatalf("err = %v, want a memory limit error", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("the script ran %s before it was stopped", d)
			}
			for range 3 {
				ok, err := in.InterpretHealth(context.Background(), widget(map[string]any{"spec": map[string]any{}}))
				if err != nil || !ok {
					t.Fatalf("after the memory limit: %v, %v", ok, err)
				}
			}
		})
	}
}

// TestGarbageIsNotHeld: a script may allocate far more than the limit over a call, as long as it does not hold it.
func TestGarbageIsNotHeld(t *testing.T) {
	in, err := New([]configv1alpha1.ResourceInterpreterCustomization{health("churn", `
function InterpretHealth(obj)
  local n = 0
  for i = 1, 20000 do
    local s = string.rep("y", 1000)
    n = n + #s
  end
  return n == 20000000
end`)})
	if err != nil {
		t.Fatal(err)
	}
	in.WithTimeout(20 * time.Second).WithMemoryLimit(4 << 20)
	ok, err := in.InterpretHealth(context.Background(), widget(nil))
	if err != nil || !ok {
		t.Fatalf("InterpretHealth = %v, %v; want true after allocating 20 MB of garbage under a 4 MiB limit", ok, err)
	}
}

func TestValidateStopsAHogAtTopLevel(t *testing.T) {
	c := health("top", `local t = {} for i = 1, 1e9 do t[i] = string.rep("x", 1000) end function InterpretHealth(obj) return true end`)
	start := time.Now()
	err := Validate(&c)
	var memErr *MemoryLimitError
	if !errors.As(err, &memErr) {
		t.Fatalf("Validate = %v, want a memory limit error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("ran %s", d)
	}
}

// TestDefaultLimitsStopTheIssueExample runs the example of the issue with the default memory limit: it must fail
// on memory, fast, with an error that says so. (It takes about a tenth of the default timeout; the test allows
// more, for slow machines and the race detector.)
func TestDefaultLimitsStopTheIssueExample(t *testing.T) {
	in, err := New([]configv1alpha1.ResourceInterpreterCustomization{status("hog", `
function ReflectStatus(obj)
  if obj.status.hog then
    local t = {} for i=1,1e9 do t[i]=string.rep("x",1000) end
  end
  return obj.status
end`)})
	if err != nil {
		t.Fatal(err)
	}
	in.WithTimeout(30 * time.Second)
	start := time.Now()
	_, err = in.InterpretStatus(context.Background(), widget(map[string]any{"status": map[string]any{"hog": true}}))
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("stopped after %s", d)
	}
	var memErr *MemoryLimitError
	if !errors.As(err, &memErr) || memErr.Limit != DefaultMemoryLimit || !strings.Contains(err.Error(), "more than 64 MiB") {
		t.Fatalf("err = %v, want the default memory limit error", err)
	}
	raw, err := in.InterpretStatus(context.Background(), widget(map[string]any{"status": map[string]any{"hog": false}}))
	if err != nil || string(raw.Raw) != `{"hog":false}` {
		t.Fatalf("next call: %s, %v", raw, err)
	}
}
