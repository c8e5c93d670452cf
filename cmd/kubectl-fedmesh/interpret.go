package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/bundled"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/declarative"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
)

// interpretOptions are the flags of the interpret subcommand.
type interpretOptions struct {
	customizationFile string
	operation         string
	desiredFile       string
	observedFile      string
	statusFile        string
	desiredReplica    int32
	output            string
	check             bool

	stdin io.Reader // read for a file named "-"
}

func newInterpretCommand(stdin io.Reader) *cobra.Command {
	o := &interpretOptions{stdin: stdin}
	cmd := &cobra.Command{
		Use:   "interpret",
		Short: "Run a resource interpreter operation on objects in files",
		Long: `Run a resource interpreter operation offline and print its result.

With -f, the ResourceInterpreterCustomizations in the file answer; without it, the interpreters built into fedmesh
(bundled customizations for well-known CRDs, then native Go for Kubernetes kinds) do. --check only validates the
file's scripts.

The result is one object whose keys are those of the operation: replica and requires (InterpretReplica),
components (InterpretComponent), revised (ReviseReplica), retained (Retain), status (InterpretStatus),
aggregatedStatus (AggregateStatus), healthy (InterpretHealth), dependencies (InterpretDependency).`,
		Example: `  kubectl-fedmesh interpret -f cloneset-ric.yaml --check
  kubectl-fedmesh interpret -f cloneset-ric.yaml --operation InterpretReplica --desired-file cloneset.yaml
  kubectl-fedmesh interpret --operation AggregateStatus --desired-file deploy.yaml --status-file statuses.yaml -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(cmd); err != nil {
				return err
			}
			return o.run(cmd)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.customizationFile, "filename", "f", "", "file of ResourceInterpreterCustomizations (YAML, several separated by ---)")
	fs.StringVar(&o.operation, "operation", "", "operation to run: "+operationNames())
	fs.StringVar(&o.desiredFile, "desired-file", "", "the template, or the object about to be applied for Retain")
	fs.StringVar(&o.observedFile, "observed-file", "", "the object as it is in a member cluster")
	fs.StringVar(&o.statusFile, "status-file", "", "for AggregateStatus: a YAML list of {clusterName, status, applied, health}")
	fs.Int32Var(&o.desiredReplica, "desired-replica", 0, "for ReviseReplica: the cluster's share of replicas")
	fs.StringVarP(&o.output, "output", "o", "yaml", "output format: json or yaml")
	fs.BoolVar(&o.check, "check", false, "only validate the scripts of the -f file")
	return cmd
}

func operationNames() string {
	names := make([]string, len(interpreter.Operations))
	for i, op := range interpreter.Operations {
		names[i] = string(op)
	}
	return strings.Join(names, ", ")
}

// parseOperation accepts an operation's name in any case.
func parseOperation(s string) (interpreter.Operation, error) {
	for _, op := range interpreter.Operations {
		if strings.EqualFold(s, string(op)) {
			return op, nil
		}
	}
	return "", fmt.Errorf("unknown operation %q; want one of %s", s, operationNames())
}

func (o *interpretOptions) validate(cmd *cobra.Command) error {
	if o.output != "json" && o.output != "yaml" {
		return fmt.Errorf("-o %q: want json or yaml", o.output)
	}
	if o.check {
		if o.customizationFile == "" {
			return errors.New("--check needs -f")
		}
		return nil
	}
	if o.operation == "" {
		return errors.New("--operation is required (or --check with -f)")
	}
	op, err := parseOperation(o.operation)
	if err != nil {
		return err
	}
	if op == interpreter.ReviseReplica && !cmd.Flags().Changed("desired-replica") {
		return errors.New("ReviseReplica needs --desired-replica")
	}
	if o.desiredReplica < 0 {
		return fmt.Errorf("--desired-replica %d: want 0 or more", o.desiredReplica)
	}
	if o.statusFile != "" && op != interpreter.AggregateStatus {
		return fmt.Errorf("--status-file is only for AggregateStatus, not %s", op)
	}
	return nil
}

func (o *interpretOptions) run(cmd *cobra.Command) error {
	var customizations []configv1alpha1.ResourceInterpreterCustomization
	if o.customizationFile != "" {
		var err error
		if customizations, err = o.readCustomizations(); err != nil {
			return err
		}
	}
	if o.check {
		if err := declarative.ValidateSet(customizations); err != nil {
			return err
		}
		for i := range customizations {
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok\n", describe(&customizations[i]))
		}
		return nil
	}

	in, err := o.interpreter(customizations)
	if err != nil {
		return err
	}
	req, err := o.request()
	if err != nil {
		return err
	}
	res, err := interpreter.Do(cmd.Context(), in, req)
	if err != nil {
		return err
	}
	return o.print(cmd.OutOrStdout(), res)
}

// interpreter is the customizations of -f alone, so that a missing script shows as unsupported rather than
// being answered by a built-in interpreter; without -f, the built-in layers.
func (o *interpretOptions) interpreter(customizations []configv1alpha1.ResourceInterpreterCustomization) (interpreter.Interpreter, error) {
	if o.customizationFile == "" {
		return interpreter.Layers{Bundled: bundled.New(), Native: native.New()}.Chain(), nil
	}
	return declarative.New(customizations)
}

func (o *interpretOptions) request() (*interpreter.Request, error) {
	op, _ := parseOperation(o.operation)
	req := &interpreter.Request{Operation: op, InputReplicas: o.desiredReplica}
	var err error
	if o.desiredFile != "" {
		if req.DesiredObj, err = o.readObject(o.desiredFile); err != nil {
			return nil, err
		}
	}
	if o.observedFile != "" {
		if req.ObservedObj, err = o.readObject(o.observedFile); err != nil {
			return nil, err
		}
	}
	if o.statusFile != "" {
		data, err := o.read(o.statusFile)
		if err != nil {
			return nil, err
		}
		if err := yaml.UnmarshalStrict(data, &req.StatusItems); err != nil {
			return nil, fmt.Errorf("%s: want a list of {clusterName, status, applied, health}: %w", o.statusFile, err)
		}
		for i, item := range req.StatusItems {
			if item.ClusterName == "" {
				return nil, fmt.Errorf("%s: item %d has no clusterName", o.statusFile, i+1)
			}
		}
	}
	return req, nil
}

func (o *interpretOptions) print(w io.Writer, res *interpreter.Result) error {
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if o.output == "yaml" {
		if data, err = yaml.JSONToYAML(data); err != nil {
			return err
		}
	} else {
		data = append(data, '\n')
	}
	_, err = w.Write(data)
	return err
}

func (o *interpretOptions) read(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(o.stdin)
	}
	return os.ReadFile(name)
}

// readObject reads the one object of a YAML or JSON file.
func (o *interpretOptions) readObject(name string) (*unstructured.Unstructured, error) {
	data, err := o.read(name)
	if err != nil {
		return nil, err
	}
	docs := splitYAML(data)
	if len(docs) != 1 {
		return nil, fmt.Errorf("%s: want one object, found %d", name, len(docs))
	}
	var obj map[string]any
	if err := yaml.Unmarshal(docs[0], &obj); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	u := &unstructured.Unstructured{Object: obj}
	if u.GetAPIVersion() == "" || u.GetKind() == "" {
		return nil, fmt.Errorf("%s: the object needs apiVersion and kind", name)
	}
	return u, nil
}

func (o *interpretOptions) readCustomizations() ([]configv1alpha1.ResourceInterpreterCustomization, error) {
	data, err := o.read(o.customizationFile)
	if err != nil {
		return nil, err
	}
	var out []configv1alpha1.ResourceInterpreterCustomization
	for i, doc := range splitYAML(data) {
		var c configv1alpha1.ResourceInterpreterCustomization
		if err := yaml.UnmarshalStrict(doc, &c); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", o.customizationFile, i+1, err)
		}
		if c.Kind != "ResourceInterpreterCustomization" {
			return nil, fmt.Errorf("%s: document %d is a %q, want a ResourceInterpreterCustomization", o.customizationFile, i+1, c.Kind)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no ResourceInterpreterCustomization", o.customizationFile)
	}
	return out, nil
}

// splitYAML splits a multi-document YAML stream on its "---" lines, dropping empty documents.
func splitYAML(data []byte) [][]byte {
	var docs [][]byte
	var cur []string
	flush := func() {
		doc := strings.Join(cur, "\n")
		if strings.TrimSpace(stripComments(doc)) != "" {
			docs = append(docs, []byte(doc))
		}
		cur = nil
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimRight(line, " \t\r") == "---" {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return docs
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func describe(c *configv1alpha1.ResourceInterpreterCustomization) string {
	if c.Name != "" {
		return c.Name
	}
	return c.Spec.Target.APIVersion + "/" + c.Spec.Target.Kind
}
