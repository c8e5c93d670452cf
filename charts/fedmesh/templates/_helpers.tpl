{{/* Names: every object is <release>-<component>. The release part is cut to 39 characters: a federator
StatefulSet is that and "-federator-rN" (13), and its pods' controller-revision-hash label, the StatefulSet's name
and "-" and a hash of up to 10 digits, must stay within 63. */}}
{{- define "fedmesh.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 39 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 39 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- define "fedmesh.manager" -}}{{ include "fedmesh.fullname" . }}-manager{{- end -}}
{{- define "fedmesh.federator" -}}{{ include "fedmesh.fullname" . }}-federator{{- end -}}
{{- define "fedmesh.certs" -}}{{ include "fedmesh.fullname" . }}-certs{{- end -}}

{{- define "fedmesh.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels of one component: pass (list $ "manager"). */}}
{{- define "fedmesh.selector" -}}
{{- $ := index . 0 -}}
app.kubernetes.io/name: {{ $.Chart.Name }}
app.kubernetes.io/instance: {{ $.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "fedmesh.image" -}}
{{- $ := index . 0 -}}
{{- printf "%s/%s:%s" $.Values.image.repository (index . 1) ($.Values.image.tag | default $.Chart.AppVersion) -}}
{{- end -}}

{{- define "fedmesh.proxyImage" -}}
{{- .Values.proxy.image | default (include "fedmesh.image" (list . "proxy")) -}}
{{- end -}}

{{/* Restricted pod security: non-root, no privilege escalation, no capabilities, read-only root. */}}
{{- define "fedmesh.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}
{{- define "fedmesh.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end -}}

{{/*
The serving certificates, computed once per render and shared by every template (cached on the root context).
self-signed: reuse the installed Secret unless it is missing or expires within renewBeforeDays; otherwise a new CA
signs certificates for the manager's Service (webhooks and xDS) and the federator's Service (its webhook).
*/}}
{{- define "fedmesh.selfSigned" -}}
{{- if not (hasKey $ "fedmeshCerts") -}}
{{- $name := include "fedmesh.certs" . -}}
{{- $ns := .Release.Namespace -}}
{{- $have := lookup "v1" "Secret" $ns $name -}}
{{- $certs := dict -}}
{{- if and $have $have.data (hasKey $have.data "ca.crt") (hasKey $have.metadata "annotations") -}}
{{- $notAfter := index $have.metadata.annotations "fedmesh.io/not-after" | default "0" | int64 -}}
{{- if gt $notAfter (add (now | unixEpoch) (mul .Values.certificates.renewBeforeDays 86400) | int64) -}}
{{- $certs = $have.data -}}
{{- $_ := set $certs "notAfter" (toString $notAfter) -}}
{{- end -}}
{{- end -}}
{{- if not $certs -}}
{{- if ge (int .Values.certificates.renewBeforeDays) (int .Values.certificates.validityDays) -}}
{{- fail "certificates.renewBeforeDays must be less than certificates.validityDays: new certificates would be renewed at every upgrade" -}}
{{- end -}}
{{- $days := int .Values.certificates.validityDays -}}
{{- $ca := genCA (printf "%s-ca" (include "fedmesh.fullname" .)) $days -}}
{{- $m := include "fedmesh.manager" . -}}
{{- $f := include "fedmesh.federator" . -}}
{{- $mgr := genSignedCert $m nil (list $m (printf "%s.%s" $m $ns) (printf "%s.%s.svc" $m $ns) (printf "%s.%s.svc.cluster.local" $m $ns)) $days $ca -}}
{{- $fed := genSignedCert $f nil (list $f (printf "%s.%s" $f $ns) (printf "%s.%s.svc" $f $ns) (printf "%s.%s.svc.cluster.local" $f $ns)) $days $ca -}}
{{- $certs = dict "ca.crt" ($ca.Cert | b64enc) "manager.crt" ($mgr.Cert | b64enc) "manager.key" ($mgr.Key | b64enc) "federator.crt" ($fed.Cert | b64enc) "federator.key" ($fed.Key | b64enc) "notAfter" (toString (add (now | unixEpoch) (mul $days 86400))) -}}
{{- end -}}
{{- $_ := set $ "fedmeshCerts" $certs -}}
{{- end -}}
{{- end -}}

{{/* caBundle of the webhook configurations (base64 PEM); empty under cert-manager, where cainjector fills the
federator's and the manager fills its own. */}}
{{- define "fedmesh.caBundle" -}}
{{- if eq .Values.certificates.mode "self-signed" -}}
{{- include "fedmesh.selfSigned" . -}}
{{- index $.fedmeshCerts "ca.crt" -}}
{{- end -}}
{{- end -}}

{{/* Secret names holding tls.crt, tls.key and ca.crt of each component. */}}
{{- define "fedmesh.managerTLS" -}}{{ include "fedmesh.manager" . }}-tls{{- end -}}
{{- define "fedmesh.federatorTLS" -}}{{ include "fedmesh.federator" . }}-tls{{- end -}}

{{/* The certificate volume of a component (pass (list $ "manager")): tls.crt, tls.key and ca.crt. */}}
{{- define "fedmesh.certVolume" -}}
{{- $ := index . 0 -}}
{{- $component := index . 1 -}}
name: certs
secret:
  {{- if eq $.Values.certificates.mode "self-signed" }}
  secretName: {{ include "fedmesh.certs" $ }}
  items:
    - {key: ca.crt, path: ca.crt}
    - {key: {{ $component }}.crt, path: tls.crt}
    - {key: {{ $component }}.key, path: tls.key}
  {{- else }}
  secretName: {{ include (printf "fedmesh.%s" $component) $ }}-tls
  {{- end }}
{{- end -}}

{{/* Rolls a component's pods when the CA is replaced: injected proxies trust the CA stamped on their pods. */}}
{{- define "fedmesh.certChecksum" -}}
{{- if eq .Values.certificates.mode "self-signed" -}}
{{- include "fedmesh.selfSigned" . -}}
checksum/ca: {{ index $.fedmeshCerts "ca.crt" | sha256sum | quote }}
{{- end -}}
{{- end -}}

{{/* Names what the manager injects into each proxy when its pod is made (fedmesh.io/proxy-config on the
federator's pods, --proxy-config of the manager): a change rolls the federator's pods, whose proxies would
otherwise keep dialling an old xDS port, or keep their ranges for an old, longer lease; and the old manager refuses
the new pods, so that none gets the old settings in the upgrade. */}}
{{- define "fedmesh.proxyConfig" -}}
{{- list .Values.manager.xdsPort .Values.manager.proxyLease (include "fedmesh.proxyImage" .) .Values.proxy.resources | toJson | sha256sum | trunc 16 -}}
{{- end -}}

{{/* A resource list as the manager's --proxy-requests and --proxy-limits take it: cpu=50m,memory=64Mi. */}}
{{- define "fedmesh.resourcePairs" -}}
{{- $pairs := list -}}
{{- range $name, $quantity := . -}}
{{- $pairs = append $pairs (printf "%s=%v" $name $quantity) -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end -}}

{{/* A quantity (50m, 64Mi, 1e3, 0.5) as a plain number: 0.05, 67108864, 1000, 0.5. Only to compare two. */}}
{{- define "fedmesh.quantity" -}}
{{- $q := toString . -}}
{{- $re := `^[+]?([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$` -}}
{{- if not (regexMatch $re $q) -}}
{{- fail (printf "%q is not a quantity" $q) -}}
{{- end -}}
{{- $units := dict "" 1.0 "n" 1e-9 "u" 1e-6 "m" 1e-3 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "P" 1e15 "E" 1e18
  "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "Pi" 1125899906842624.0 "Ei" 1152921504606846976.0 -}}
{{- $number := regexReplaceAll $re $q "${1}${2}" | float64 -}}
{{- mulf $number (get $units (regexReplaceAll $re $q "${3}")) -}}
{{- end -}}

{{/* Refuses proxy.resources the manager would refuse at start: a quantity of 0, or a request above its limit. */}}
{{- define "fedmesh.checkProxyResources" -}}
{{- $r := .Values.proxy.resources -}}
{{- range $kind := list "requests" "limits" -}}
{{- range $name, $q := get $r $kind | default dict -}}
{{- if le (include "fedmesh.quantity" $q | float64) 0.0 -}}
{{- fail (printf "proxy.resources.%s.%s (%v) must be more than 0" $kind $name $q) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $name, $limit := $r.limits | default dict -}}
{{- $request := get ($r.requests | default dict) $name -}}
{{- if and $request (gt (include "fedmesh.quantity" $request | float64) (include "fedmesh.quantity" $limit | float64)) -}}
{{- fail (printf "proxy.resources.requests.%s (%v) is more than proxy.resources.limits.%s (%v): Kubernetes refuses a container whose request exceeds its limit. Lower the request, or leave it out: a limit alone is the request too" $name $request $name $limit) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The federator's replicas of one shard preferably on different nodes (a podAntiAffinity). */}}
{{- define "fedmesh.federatorShardSpread" -}}
preferredDuringSchedulingIgnoredDuringExecution:
  - weight: 100
    podAffinityTerm:
      topologyKey: kubernetes.io/hostname
      labelSelector:
        matchExpressions:
          - {key: app.kubernetes.io/component, operator: In, values: [federator]}
          - {key: app.kubernetes.io/instance, operator: In, values: [{{ .Release.Name }}]}
      matchLabelKeys: [apps.kubernetes.io/pod-index]
{{- end }}

{{/* A PodDisruptionBudget's count or percentage: a percentage quoted, a count (a number, or digits given as a
string) as an integer (a large number from a values file would otherwise print as 1e+06, which is neither). */}}
{{- define "fedmesh.intOrPercent" -}}
{{- if and (kindIs "string" .) (hasSuffix "%" .) }}{{ quote . }}{{ else }}{{ int . }}{{ end -}}
{{- end }}
