package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/fedmesh/fedmesh/pkg/manager/labelmode"
	"github.com/fedmesh/fedmesh/pkg/webhook/inject"
	"github.com/fedmesh/fedmesh/pkg/webhook/labels"
)

// injectionConfigurationName is the MutatingWebhookConfiguration of sidecar injection.
const injectionConfigurationName = "fedmesh-proxy-injection"

// webhookOptions are the manager's admission webhooks: label mode and sidecar injection. Without a certificate
// directory both are off.
type webhookOptions struct {
	certDir     string
	host        string
	port        int
	url         string // how the API server reaches the webhook server, when not through a Service
	service     string // namespace/name of the manager's Service
	caFile      string
	proxyImage  string
	proxyXDS    string
	proxyXDSCA  string
	proxyTokenA string
}

func (o *webhookOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.certDir, "webhook-cert-dir", "", "Directory with tls.crt and tls.key for the admission webhooks; empty turns label mode and injection off.")
	fs.StringVar(&o.host, "webhook-bind-host", "", "Host the webhook server listens on.")
	fs.IntVar(&o.port, "webhook-port", 9443, "Port of the webhook server.")
	fs.StringVar(&o.url, "webhook-url", "", "Base URL the API server calls the webhooks at (instead of --webhook-service), e.g. https://127.0.0.1:9443.")
	fs.StringVar(&o.service, "webhook-service", "", "namespace/name of the Service in front of the webhook server.")
	fs.StringVar(&o.caFile, "webhook-ca-file", "", "CA bundle the API server verifies the webhook server with.")
	fs.StringVar(&o.proxyImage, "proxy-image", "", "Image of the injected proxy sidecar; empty turns injection off.")
	fs.StringVar(&o.proxyXDS, "proxy-xds-address", "", "The xDS address injected proxies dial (the manager's Service, host:port).")
	fs.StringVar(&o.proxyXDSCA, "proxy-xds-ca-file", "", "CA injected proxies verify the xDS server with.")
	fs.StringVar(&o.proxyTokenA, "proxy-xds-audience", "", "Audience of the token injected proxies present (match --xds-token-audiences).")
}

func (o *webhookOptions) enabled() bool { return o.certDir != "" }

func (o *webhookOptions) validate() error {
	if !o.enabled() {
		return nil
	}
	var errs []error
	if (o.url == "") == (o.service == "") {
		errs = append(errs, errors.New("--webhook-cert-dir needs exactly one of --webhook-url and --webhook-service"))
	}
	if o.caFile == "" {
		errs = append(errs, errors.New("--webhook-cert-dir needs --webhook-ca-file"))
	}
	if o.proxyImage != "" && (o.proxyXDS == "" || o.proxyXDSCA == "") {
		errs = append(errs, errors.New("--proxy-image needs --proxy-xds-address and --proxy-xds-ca-file"))
	}
	return errors.Join(errs...)
}

func (o *webhookOptions) customize(opts *ctrl.Options) {
	if o.enabled() {
		opts.WebhookServer = webhook.NewServer(webhook.Options{Host: o.host, Port: o.port, CertDir: o.certDir})
	}
}

// clientConfig says how the API server reaches the webhook at path.
func (o *webhookOptions) clientConfig(path string) (admissionregistrationv1.WebhookClientConfig, error) {
	ca, err := os.ReadFile(o.caFile)
	if err != nil {
		return admissionregistrationv1.WebhookClientConfig{}, err
	}
	if o.url != "" {
		u := strings.TrimSuffix(o.url, "/") + path
		return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: ca}, nil
	}
	ns, name, _ := strings.Cut(o.service, "/")
	port := int32(443)
	return admissionregistrationv1.WebhookClientConfig{
		Service:  &admissionregistrationv1.ServiceReference{Namespace: ns, Name: name, Path: &path, Port: &port},
		CABundle: ca,
	}, nil
}

// setup registers the webhooks, the label-mode controller, and the injection registration with the controller that
// replaces pods admitted before it.
func (o *webhookOptions) setup(mgr ctrl.Manager) error {
	if !o.enabled() {
		ctrl.Log.Info("admission webhooks off (no --webhook-cert-dir): label mode relies on the proxies' own stamping, no sidecar injection")
		return nil
	}
	server := mgr.GetWebhookServer()
	server.Register(labels.Path, &admission.Webhook{Handler: labels.Handler{}})
	labelsConfig, err := o.clientConfig(labels.Path)
	if err != nil {
		return err
	}
	backfill, err := labels.NewBackfill(mgr)
	if err != nil {
		return err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	err = (&labelmode.Reconciler{Client: mgr.GetClient(), Mapper: mgr.GetRESTMapper(), Discovery: disco,
		ClientConfig: labelsConfig, Backfill: backfill}).SetupWithManager(mgr)
	if err != nil {
		return err
	}
	if o.proxyImage == "" {
		return nil
	}
	xdsCA, err := os.ReadFile(o.proxyXDSCA)
	if err != nil {
		return err
	}
	server.Register(inject.Path, &admission.Webhook{Handler: &inject.Handler{Reader: mgr.GetClient(), Options: inject.Options{
		Image: o.proxyImage, XDSAddress: o.proxyXDS, XDSCA: xdsCA, XDSAudience: o.proxyTokenA,
	}}})
	injectConfig, err := o.clientConfig(inject.Path)
	if err != nil {
		return err
	}
	err = (&inject.Readmitter{Client: mgr.GetClient(), Registration: injectionConfigurationName,
		Recorder: mgr.GetEventRecorder("fedmesh-manager")}).SetupWithManager(mgr)
	if err != nil {
		return err
	}
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return apply(ctx, mgr.GetClient(), inject.MutatingWebhookConfiguration(injectionConfigurationName, injectConfig))
	}))
}

// apply creates or replaces the webhooks of a MutatingWebhookConfiguration.
func apply(ctx context.Context, c client.Client, want *admissionregistrationv1.MutatingWebhookConfiguration) error {
	var have admissionregistrationv1.MutatingWebhookConfiguration
	err := c.Get(ctx, client.ObjectKeyFromObject(want), &have)
	if apierrors.IsNotFound(err) {
		return c.Create(ctx, want)
	} else if err != nil {
		return fmt.Errorf("get %s: %w", want.Name, err)
	}
	have.Webhooks = want.Webhooks
	return c.Update(ctx, &have)
}
