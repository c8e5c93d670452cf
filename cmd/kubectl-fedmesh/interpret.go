package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
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
	fs.StringVarP(&o.customizationFile, "filename", "f", "", "file of ResourceInterpreterCustomizations (YAML, several separated by ---, or a List as kubectl get -o yaml writes)")
	fs.StringVar(&o.operation, "operation", "", "operation to run: "+operationNames())
	fs.StringVar(&o.desiredFile, "desired-file", "", "the template, or the object about to be applied for Retain")
	fs.StringVar(&o.observedFile, "observed-file", "", "the object as it is in a member cluster")
	fs.StringVar(&o.statusFile, "status-file", "", "for AggregateStatus: a YAML list of {clusterName, status, applied, health}, or one of them per document (as karmadactl interpret takes)")
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
		if req.StatusItems, err = o.readStatusItems(); err != nil {
			return nil, err
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

// readObject reads the one object of a YAML or JSON file as the federator gets it from the API server: through
// JSON, integers as int64 (a YAML decoder makes them float64, which the interpreters read as 0).
func (o *interpretOptions) readObject(name string) (*unstructured.Unstructured, error) {
	data, err := o.read(name)
	if err != nil {
		return nil, err
	}
	docs := splitYAML(data)
	if len(docs) != 1 {
		return nil, fmt.Errorf("%s: want one object, found %d", name, len(docs))
	}
	js, err := yaml.YAMLToJSON(docs[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(js, &obj); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	u := &unstructured.Unstructured{Object: obj}
	if u.GetAPIVersion() == "" || u.GetKind() == "" {
		return nil, fmt.Errorf("%s: the object needs apiVersion and kind", name)
	}
	return u, nil
}

// readStatusItems reads --status-file: a YAML list of AggregatedStatusItems, or a stream of them, one per
// document (karmadactl interpret's form).
func (o *interpretOptions) readStatusItems() ([]workv1alpha1.AggregatedStatusItem, error) {
	data, err := o.read(o.statusFile)
	if err != nil {
		return nil, err
	}
	var items []workv1alpha1.AggregatedStatusItem
	for i, doc := range splitYAML(data) {
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", o.statusFile, i+1, err)
		}
		if bytes.HasPrefix(bytes.TrimSpace(js), []byte("[")) {
			var list []workv1alpha1.AggregatedStatusItem
			if err := yaml.UnmarshalStrict(doc, &list); err != nil {
				return nil, fmt.Errorf("%s: document %d: want a list of {clusterName, status, applied, health}: %w", o.statusFile, i+1, err)
			}
			items = append(items, list...)
			continue
		}
		var item workv1alpha1.AggregatedStatusItem
		if err := yaml.UnmarshalStrict(doc, &item); err != nil {
			return nil, fmt.Errorf("%s: document %d: want a {clusterName, status, applied, health}, or a list of them: %w", o.statusFile, i+1, err)
		}
		items = append(items, item)
	}
	for i, item := range items {
		if item.ClusterName == "" {
			return nil, fmt.Errorf("%s: item %d has no clusterName", o.statusFile, i+1)
		}
	}
	return items, nil
}

// readCustomizations reads the -f file: ResourceInterpreterCustomizations, one per document, or lists of them
// (a List, as kubectl get -o yaml writes, or a ResourceInterpreterCustomizationList).
func (o *interpretOptions) readCustomizations() ([]configv1alpha1.ResourceInterpreterCustomization, error) {
	data, err := o.read(o.customizationFile)
	if err != nil {
		return nil, err
	}
	var out []configv1alpha1.ResourceInterpreterCustomization
	for i, doc := range splitYAML(data) {
		var head metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", o.customizationFile, i+1, err)
		}
		if head.Kind != "List" && head.Kind != "ResourceInterpreterCustomizationList" {
			c, err := decodeCustomization(doc, true)
			if err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", o.customizationFile, i+1, err)
			}
			out = append(out, c)
			continue
		}
		var list struct {
			metav1.TypeMeta `json:",inline"`
			metav1.ListMeta `json:"metadata,omitempty"`
			Items           []json.RawMessage `json:"items"`
		}
		if err := yaml.UnmarshalStrict(doc, &list); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", o.customizationFile, i+1, err)
		}
		for j, item := range list.Items {
			// A typed list's items may leave out their kind; a List's say what they are.
			c, err := decodeCustomization(item, head.Kind == "List")
			if err != nil {
				return nil, fmt.Errorf("%s: document %d: item %d: %w", o.customizationFile, i+1, j+1, err)
			}
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no ResourceInterpreterCustomization", o.customizationFile)
	}
	return out, nil
}

// decodeCustomization decodes one ResourceInterpreterCustomization (YAML or JSON), refusing unknown fields and,
// when kindRequired, any other kind.
func decodeCustomization(data []byte, kindRequired bool) (configv1alpha1.ResourceInterpreterCustomization, error) {
	var c configv1alpha1.ResourceInterpreterCustomization
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return c, err
	}
	if c.Kind != "ResourceInterpreterCustomization" && (kindRequired || c.Kind != "") {
		return c, fmt.Errorf("a %q, want a ResourceInterpreterCustomization", c.Kind)
	}
	return c, nil
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
