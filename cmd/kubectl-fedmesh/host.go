package main

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedmesh/fedmesh/pkg/apis"
)

// hostOptions are the global flags that locate the host cluster (the one with the fedmesh APIs). They are named
// --host-* so that they never mix with join's and unjoin's --kubeconfig, which is the member's.
type hostOptions struct {
	kubeconfig string
	context    string
}

func (o *hostOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "host-kubeconfig", "",
		"kubeconfig of the host cluster (the one running fedmesh); default $KUBECONFIG, then ~/.kube/config")
	fs.StringVar(&o.context, "host-context", "", "context of --host-kubeconfig to use; default its current context")
}

func (o *hostOptions) config() (*rest.Config, error) {
	cfg, err := loadKubeconfig(o.kubeconfig, o.context)
	if err != nil {
		return nil, fmt.Errorf("host cluster: %w", err)
	}
	return cfg, nil
}

// client is a host client that knows the built-in and fedmesh types.
func (o *hostOptions) client() (client.Client, error) {
	cfg, err := o.config()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: newScheme()})
}

// loadKubeconfig reads the kubeconfig at path (empty: $KUBECONFIG, then ~/.kube/config) with context (empty: the
// current one).
func loadKubeconfig(path, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	return cfg, nil
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apis.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// namespaceOr is ns (a -n flag's value) when set, else the namespace of the host context.
func (o *hostOptions) namespaceOr(ns string) (string, error) {
	if ns != "" {
		return ns, nil
	}
	return o.namespace()
}

// namespace is the namespace of the host context, "default" when it names none.
func (o *hostOptions) namespace() (string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: o.context}).Namespace()
	if err != nil {
		return "", fmt.Errorf("host cluster: %w", err)
	}
	return ns, nil
}
