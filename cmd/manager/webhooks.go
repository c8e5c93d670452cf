package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/pflag"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
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
	caResync    time.Duration
	proxyImage  string
	proxyPull   string // the proxy's imagePullPolicy
	proxyXDS    string
	proxyXDSCA  string
	proxyTokenA string
	proxyConfig string
	labelOwner  string // the ClusterRole that owns label mode's registration
	// name=quantity pairs of the proxy's resources; inject fills in what neither sets.
	proxyRequests, proxyLimits map[string]string
}

func (o *webhookOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.certDir, "webhook-cert-dir", "", "Directory with tls.crt and tls.key for the admission webhooks; empty turns label mode and injection off.")
	fs.StringVar(&o.host, "webhook-bind-host", "", "Host the webhook server listens on.")
	fs.IntVar(&o.port, "webhook-port", 9443, "Port of the webhook server.")
	fs.StringVar(&o.url, "webhook-url", "", "Base URL the API server calls the webhooks at (instead of --webhook-service), e.g. https://127.0.0.1:9443.")
	fs.StringVar(&o.service, "webhook-service", "", "namespace/name of the Service in front of the webhook server.")
	fs.StringVar(&o.caFile, "webhook-ca-file", "", "CA bundle the API server verifies the webhook server with.")
	fs.DurationVar(&o.caResync, "webhook-ca-resync", 5*time.Second, "How often --webhook-ca-file is read again; a changed CA is written to the webhook registrations, beside the one before it for 5 minutes.")
	fs.StringVar(&o.labelOwner, "label-webhook-owner", "", "ClusterRole (the manager's own) that owns label mode's webhook registration, which the manager makes at run time: deleting it (helm uninstall) deletes the registration. Empty sets no owner.")
	fs.StringVar(&o.proxyImage, "proxy-image", "", "Image of the injected proxy sidecar; empty turns injection off.")
	fs.StringVar(&o.proxyPull, "proxy-image-pull-policy", string(corev1.PullIfNotPresent), "imagePullPolicy of the injected proxy sidecar: Always, IfNotPresent or Never.")
	fs.StringVar(&o.proxyXDS, "proxy-xds-address", "", "The xDS address injected proxies dial (the manager's Service, host:port).")
	fs.StringVar(&o.proxyXDSCA, "proxy-xds-ca-file", "", "CA injected proxies verify the xDS server with.")
	fs.StringVar(&o.proxyTokenA, "proxy-xds-audience", "", "Audience of the token injected proxies present (match --xds-token-audiences).")
	fs.StringVar(&o.proxyConfig, "proxy-config", "", "Name of these proxy settings: a pod annotated fedmesh.io/proxy-config with another is refused (made for other settings; its controller retries). Empty checks nothing.")
	fs.StringToStringVar(&o.proxyRequests, "proxy-requests", nil, "Resource requests of injected proxies, e.g. cpu=100m,memory=64Mi; a CPU or memory request set neither here nor in --proxy-limits is 50m or 64Mi. The CPU request, rounded up to whole cores, is the proxy's GOMAXPROCS.")
	fs.StringToStringVar(&o.proxyLimits, "proxy-limits", nil, "Resource limits of injected proxies, e.g. memory=256Mi; empty sets none.")
}

// proxyResources are the injected proxy's requests and limits from --proxy-requests and --proxy-limits.
func (o *webhookOptions) proxyResources() (corev1.ResourceRequirements, error) {
	requests, err := resourceList("proxy-requests", o.proxyRequests)
	if err != nil {
		return corev1.ResourceRequirements{}, err
	}
	limits, err := resourceList("proxy-limits", o.proxyLimits)
	if err != nil {
		return corev1.ResourceRequirements{}, err
	}
	for name, limit := range limits {
		if request, ok := requests[name]; ok && request.Cmp(limit) > 0 {
			return corev1.ResourceRequirements{}, fmt.Errorf("--proxy-requests %s=%s is more than --proxy-limits %s=%s: "+
				"Kubernetes refuses a container whose request exceeds its limit; lower the request, or leave it out "+
				"(a limit alone is the request too)", name, request.String(), name, limit.String())
		}
	}
	return corev1.ResourceRequirements{Requests: requests, Limits: limits}, nil
}

// resourceList reads the name=quantity pairs of flag as a container's resources.
func resourceList(flag string, pairs map[string]string) (corev1.ResourceList, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	out := corev1.ResourceList{}
	for name, value := range pairs {
		switch rn := corev1.ResourceName(name); rn {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
			q, err := resource.ParseQuantity(value)
			if err != nil {
				return nil, fmt.Errorf("--%s %s=%q: %w", flag, name, value, err)
			}
			if q.Sign() <= 0 {
				return nil, fmt.Errorf("--%s %s=%q: must be more than 0", flag, name, value)
			}
			out[rn] = q
		default:
			return nil, fmt.Errorf("--%s: %q is not cpu, memory or ephemeral-storage, the only resources the proxy is sized by", flag, name)
		}
	}
	return out, nil
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
	if o.caResync <= 0 {
		errs = append(errs, errors.New("--webhook-ca-resync must be more than 0"))
	}
	if o.proxyImage != "" && (o.proxyXDS == "" || o.proxyXDSCA == "") {
		errs = append(errs, errors.New("--proxy-image needs --proxy-xds-address and --proxy-xds-ca-file"))
	}
	switch corev1.PullPolicy(o.proxyPull) {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		errs = append(errs, fmt.Errorf("--proxy-image-pull-policy %q is not Always, IfNotPresent or Never", o.proxyPull))
	}
	if _, err := o.proxyResources(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (o *webhookOptions) customize(opts *ctrl.Options) {
	if o.enabled() {
		opts.WebhookServer = webhook.NewServer(webhook.Options{Host: o.host, Port: o.port, CertDir: o.certDir})
	}
}

// clientConfig says how the API server reaches the webhook at path, trusting ca.
func (o *webhookOptions) clientConfig(path string, ca []byte) admissionregistrationv1.WebhookClientConfig {
	if o.url != "" {
		u := strings.TrimSuffix(o.url, "/") + path
		return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: ca}
	}
	ns, name, _ := strings.Cut(o.service, "/")
	port := int32(443)
	return admissionregistrationv1.WebhookClientConfig{
		Service:  &admissionregistrationv1.ServiceReference{Namespace: ns, Name: name, Path: &path, Port: &port},
		CABundle: ca,
	}
}

// setup registers the webhooks, the label-mode controller, the injection registration with the controller that
// replaces pods admitted before it, and the loop that keeps the registrations' CA bundle current (webhookCABundle).
func (o *webhookOptions) setup(mgr ctrl.Manager, proxyLease time.Duration, recorder record.EventRecorder) error {
	if !o.enabled() {
		ctrl.Log.Info("admission webhooks off (no --webhook-cert-dir): label mode relies on the proxies' own stamping, no sidecar injection")
		return nil
	}
	server := mgr.GetWebhookServer()
	server.Register(labels.Path, &admission.Webhook{Handler: labels.Handler{}})
	caBundle := &webhookCABundle{file: &fileCA{path: o.caFile, what: "webhook CA"}, every: o.caResync, now: time.Now,
		labelMode: make(chan event.GenericEvent, 1)}
	if _, err := caBundle.read(); err != nil {
		return err
	}
	if err := mgr.Add(caBundle); err != nil {
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
	labelsConfig := func() (admissionregistrationv1.WebhookClientConfig, error) {
		return o.clientConfig(labels.Path, caBundle.bundle()), nil
	}
	err = (&labelmode.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Owner: o.labelOwner,
		Mapper: mgr.GetRESTMapper(), Discovery: disco, ClientConfig: labelsConfig, Resync: caBundle.labelMode,
		Backfill: backfill, Recorder: recorder}).SetupWithManager(mgr)
	if err != nil {
		return err
	}
	if o.proxyImage == "" {
		return nil
	}
	xdsCA := &fileCA{path: o.proxyXDSCA, what: "xDS CA"}
	if _, err := xdsCA.current(); err != nil {
		return err
	}
	opts, err := o.injectOptions(proxyLease)
	if err != nil {
		return err
	}
	server.Register(inject.Path, &admission.Webhook{Handler: &currentCAInjection{ca: xdsCA, handler: inject.Handler{
		Reader: mgr.GetClient(), Options: opts}}})
	caBundle.injection = func(ctx context.Context, ca []byte) error {
		return apply(ctx, mgr.GetClient(), inject.MutatingWebhookConfiguration(injectionConfigurationName, o.clientConfig(inject.Path, ca)))
	}
	return (&inject.Readmitter{Client: mgr.GetClient(), Registration: injectionConfigurationName,
		Recorder: recorder}).SetupWithManager(mgr)
}

// injectOptions are the injected proxy's settings, but for its xDS CA, which is read at each pod's admission
// (currentCAInjection).
func (o *webhookOptions) injectOptions(proxyLease time.Duration) (inject.Options, error) {
	resources, err := o.proxyResources()
	if err != nil {
		return inject.Options{}, err
	}
	return inject.Options{Image: o.proxyImage, ImagePullPolicy: corev1.PullPolicy(o.proxyPull), XDSAddress: o.proxyXDS, XDSAudience: o.proxyTokenA, Resources: resources,
		OwnershipLease: proxyLease, ProxyConfig: o.proxyConfig}, nil
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

// currentCAInjection injects with the xDS CA as the file has it at the pod's admission, not at the manager's start:
// the file and the xDS server's certificate come from the same Secret, and the server follows the certificate
// (xdsCredentials), so a pod admitted after the CA changed trusts the certificate the server now presents. Pods
// admitted before keep the CA they were given: see the CA rotation notes in the chart's README.
type currentCAInjection struct {
	handler inject.Handler // but for Options.XDSCA, set per request
	ca      *fileCA
}

func (h *currentCAInjection) Handle(ctx context.Context, req admission.Request) admission.Response {
	ca, err := h.ca.current()
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("xDS CA: %w", err))
	}
	handler := h.handler // a copy: requests are served concurrently
	handler.Options.XDSCA = ca
	return handler.Handle(ctx, req)
}
