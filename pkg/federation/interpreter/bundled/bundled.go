package bundled

import (
	"embed"
	"fmt"
	"path"

	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/declarative"
)

//go:embed customizations/*.yaml
var files embed.FS

// Customizations returns the bundled ResourceInterpreterCustomizations, one per file, in file-name order.
func Customizations() ([]configv1alpha1.ResourceInterpreterCustomization, error) {
	entries, err := files.ReadDir("customizations")
	if err != nil {
		return nil, err
	}
	var out []configv1alpha1.ResourceInterpreterCustomization
	for _, e := range entries {
		name := path.Join("customizations", e.Name())
		data, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		var c configv1alpha1.ResourceInterpreterCustomization
		if err := yaml.UnmarshalStrict(data, &c); err != nil {
			return nil, fmt.Errorf("bundled %s: %w", name, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// New returns the interpreter of the bundled layer. A bundled script that does not compile is a build defect,
// which the package's tests catch, so New panics on it. Compiled scripts are cached, so New is cheap after the first
// call; each call returns its own Interpreter, whose timeout the caller may set.
func New() *declarative.Interpreter {
	cs, err := Customizations()
	if err == nil {
		var in *declarative.Interpreter
		if in, err = declarative.New(cs); err == nil {
			return in
		}
	}
	panic(fmt.Sprintf("bundled customizations: %v", err))
}
