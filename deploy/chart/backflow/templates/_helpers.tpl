{{/* The chart's name, and the release's full name (63 characters at most). */}}
{{- define "backflow.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "backflow.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "backflow.selectorLabels" -}}
app.kubernetes.io/name: {{ include "backflow.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "backflow.labels" -}}
{{ include "backflow.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "backflow.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "backflow.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "backflow.secretName" -}}
{{- default (include "backflow.fullname" .) .Values.credentials.existingSecret -}}
{{- end -}}

{{- define "backflow.admissionName" -}}
{{- printf "%s-admission" (include "backflow.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "backflow.admissionSecretName" -}}
{{- if .Values.admission.certificate.certManager -}}
{{- printf "%s-tls" (include "backflow.admissionName" .) -}}
{{- else -}}
{{- required "admission.certificate.existingSecret is required without cert-manager: a kubernetes.io/tls Secret for the webhook" .Values.admission.certificate.existingSecret -}}
{{- end -}}
{{- end -}}

{{- define "backflow.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* "true" when the replicas elect a leader: leaderElection.enabled, or more than one replica when it is null. */}}
{{- define "backflow.leaderElect" -}}
{{- if kindIs "invalid" (index .Values.leaderElection "enabled") -}}
{{- gt (int .Values.replicas) 1 -}}
{{- else -}}
{{- .Values.leaderElection.enabled -}}
{{- end -}}
{{- end -}}

{{- define "backflow.leaseName" -}}
{{- default (include "backflow.fullname" .) .Values.leaderElection.leaseName -}}
{{- end -}}

{{/* "true" when the pod talks to the Kubernetes API: its service account token is mounted. */}}
{{- define "backflow.needsAPI" -}}
{{- or .Values.kube.enabled (eq (include "backflow.leaderElect" .) "true") -}}
{{- end -}}

{{/*
The resource (plural) of a kube.objects entry: its resource, else the guess
from the kind: lower case, then y -> ies (after a consonant), s/x/ch/sh -> +es,
else +s; Endpoints stays endpoints.
*/}}
{{- define "backflow.resource" -}}
{{- with get . "resource" -}}
{{- . -}}
{{- else -}}
{{- $k := lower .kind -}}
{{- if eq $k "endpoints" -}}
endpoints
{{- else if regexMatch "[^aeiou]y$" $k -}}
{{- trimSuffix "y" $k -}}ies
{{- else if regexMatch "(s|x|ch|sh)$" $k -}}
{{- $k -}}es
{{- else -}}
{{- $k -}}s
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "backflow.apiGroup" -}}
{{- if contains "/" .apiVersion -}}{{- (split "/" .apiVersion)._0 -}}{{- end -}}
{{- end -}}

{{/*
The watch's RBAC as JSON: {"cluster": {group: [resources]}, "namespaces":
{ns: {group: [resources]}}}. The kube source lists one kind in one namespace
when every object of that kind names the same literal namespace, else in
all namespaces; the grants follow it exactly.
*/}}
{{- define "backflow.watchRBAC" -}}
{{- include "backflow.objectsRBAC" .Values.kube.objects -}}
{{- end -}}

{{/* The kinds a hold writes (hold.objects and hold.appliers) as JSON:
{"apiVersion|Kind": {"group", "resource"}}. */}}
{{- define "backflow.holdKinds" -}}
{{- $kinds := dict -}}
{{- range $o := concat .Values.hold.objects .Values.hold.appliers -}}
{{- $_ := set $kinds (printf "%s|%s" $o.apiVersion $o.kind) (dict "group" (include "backflow.apiGroup" $o) "resource" (include "backflow.resource" $o)) -}}
{{- end -}}
{{- $kinds | toJson -}}
{{- end -}}

{{/* backflow.watchRBAC's plan for any list of kube.objects entries. */}}
{{- define "backflow.objectsRBAC" -}}
{{- $kinds := dict -}}
{{- range $i, $o := . -}}
{{- $key := printf "%s|%s" $o.apiVersion $o.kind -}}
{{- $e := get $kinds $key -}}
{{- if not $e -}}
{{- $e = dict "group" (include "backflow.apiGroup" $o) "resource" (include "backflow.resource" $o) "namespaces" list -}}
{{- $_ := set $kinds $key $e -}}
{{- end -}}
{{- $_ := set $e "namespaces" (append $e.namespaces $o.namespace | uniq) -}}
{{- end -}}
{{- $cluster := dict -}}
{{- $namespaces := dict -}}
{{- range $key := keys $kinds | sortAlpha -}}
{{- $e := get $kinds $key -}}
{{- $ns := first $e.namespaces -}}
{{- $target := $cluster -}}
{{- if and (eq (len $e.namespaces) 1) $ns (not (contains "*" $ns)) -}}
{{- if not (hasKey $namespaces $ns) -}}{{- $_ := set $namespaces $ns dict -}}{{- end -}}
{{- $target = get $namespaces $ns -}}
{{- end -}}
{{- $_ := set $target $e.group (append (default list (get $target $e.group)) $e.resource | uniq | sortAlpha) -}}
{{- end -}}
{{- dict "cluster" $cluster "namespaces" $namespaces | toJson -}}
{{- end -}}

{{/* RBAC rules (YAML list) of {group: [resources]}. */}}
{{- define "backflow.rules" -}}
{{- include "backflow.rulesWith" (dict "rules" . "verbs" (list "get" "list" "watch")) -}}
{{- end -}}

{{/* RBAC rules (YAML list) of .rules, {group: [resources]}, with .verbs. */}}
{{- define "backflow.rulesWith" -}}
{{- $verbs := .verbs -}}
{{- range $g := keys .rules | sortAlpha }}
- apiGroups: [{{ $g | quote }}]
  resources: {{ get $.rules $g | toJson }}
  verbs: {{ $verbs | toJson }}
{{- end }}
{{- end -}}

{{/* The config file of backflow serve: the bot config with its server section. */}}
{{- define "backflow.config" -}}
{{- $v := .Values -}}
{{- $sec := "/var/run/secrets/backflow" -}}
{{- $gh := dict "appId" (required "github.appId is required: the GitHub App's id" $v.github.appId) "privateKeyFile" (printf "%s/private-key.pem" $sec) -}}
{{- range $k := list "baseURL" "graphqlURL" "gitURL" "appSlug" "botUserId" -}}
{{- with index $v.github $k }}{{ $_ := set $gh $k . }}{{ end -}}
{{- end -}}
{{- $c := dict "version" 1 "github" $gh -}}
{{- with $v.repositories }}{{ $_ := set $c "repositories" . }}{{ end -}}
{{- with $v.commitMethod }}{{ $_ := set $c "commitMethod" . }}{{ end -}}
{{- with $v.gitopsManagers }}{{ $_ := set $c "gitopsManagers" . }}{{ end -}}
{{- with $v.pacing }}{{ $_ := set $c "pacing" . }}{{ end -}}
{{- with $v.charts }}{{ $_ := set $c "charts" . }}{{ end -}}
{{- $obs := deepCopy (default dict $v.observations) -}}
{{- if $v.kube.enabled -}}
{{- $cluster := required "kube.cluster is required with kube.enabled: the cluster's name in the repo configs" $v.kube.cluster -}}
{{- if not $v.kube.objects -}}{{- fail "kube.objects is required with kube.enabled: the objects to watch" -}}{{- end -}}
{{- $keys := list -}}
{{- range $v.kube.objects -}}
{{- $keys = append $keys (printf "%s|%s|%s|%s" .apiVersion .kind .namespace .name) -}}
{{- end -}}
{{- $kube := dict "inCluster" true "objects" $keys -}}
{{- with $v.kube.ignoreManagers }}{{ $_ := set $kube "ignoreManagers" . }}{{ end -}}
{{- with $v.kube.resync }}{{ $_ := set $kube "resync" . }}{{ end -}}
{{- $_ := set $obs $cluster (append (default list (get $obs $cluster)) (dict "kube" $kube)) -}}
{{- end -}}
{{- with $obs }}{{ $_ := set $c "observations" . }}{{ end -}}
{{- if $v.audit.webhook.enabled -}}
{{- $w := dict -}}
{{- if $v.audit.webhook.bearerToken }}{{ $_ := set $w "tokenFile" (printf "%s/audit-token" $sec) }}{{ end -}}
{{- if $v.audit.webhook.signature }}{{ $_ := set $w "secretFile" (printf "%s/audit-secret" $sec) }}{{ end -}}
{{- if not $w }}{{ fail "audit.webhook: bearerToken or signature must be on" }}{{ end -}}
{{- with $v.audit.webhook.maxBytes }}{{ $_ := set $w "maxBytes" . }}{{ end -}}
{{- $_ := set $c "audit" (dict "webhook" $w) -}}
{{- end -}}
{{- if $v.confighub.url -}}
{{- $h := dict "url" $v.confighub.url "tokenFile" (printf "%s/confighub-token" $sec) -}}
{{- with $v.confighub.timeout }}{{ $_ := set $h "timeout" . }}{{ end -}}
{{- with $v.confighub.maxDataSize }}{{ $_ := set $h "maxDataSize" (int64 .) }}{{ end -}}
{{- $_ := set $c "confighub" $h -}}
{{- end -}}
{{- if $v.admission.enabled -}}
{{- if not $v.kube.enabled }}{{ fail "admission.enabled needs kube.enabled: the watch confirms what the webhook records" }}{{ end -}}
{{- $a := dict "listen" ":8443" "certFile" "/var/run/secrets/backflow-admission/tls.crt" "keyFile" "/var/run/secrets/backflow-admission/tls.key" -}}
{{- with $v.admission.gitopsUsers }}{{ $_ := set $a "gitopsUsers" . }}{{ end -}}
{{- with $v.admission.gitopsGroups }}{{ $_ := set $a "gitopsGroups" . }}{{ end -}}
{{- with $v.admission.maxBytes }}{{ $_ := set $a "maxBytes" . }}{{ end -}}
{{- with $v.admission.ttl }}{{ $_ := set $a "ttl" . }}{{ end -}}
{{- with $v.admission.maxHeldBytes }}{{ $_ := set $a "maxHeldBytes" (int64 .) }}{{ end -}}
{{- with $v.admission.maxInFlightBytes }}{{ $_ := set $a "maxInFlightBytes" (int64 .) }}{{ end -}}
{{- with $v.admission.clientCA }}{{ $_ := set $a "clientCAFile" "/etc/backflow/admission-client-ca.crt" }}{{ end -}}
{{- $_ := set $c "admission" $a -}}
{{- end -}}
{{- if $v.hold.enabled }}{{ $_ := set $c "hold" (dict "enabled" true) }}{{ end -}}
{{- $s := dict "listen" ":8080" "webhook" (dict "secretFile" (printf "%s/webhook-secret" $sec)) -}}
{{- range $k := list "schedule" "jitter" "maxBodyBytes" "maxWebhookBytes" "shutdownTimeout" -}}
{{- with index $v.server $k }}{{ $_ := set $s $k . }}{{ end -}}
{{- end -}}
{{- $o := $v.server.observations -}}
{{- if $o.enabled -}}
{{- $p := dict -}}
{{- if $o.bearerToken }}{{ $_ := set $p "tokenFile" (printf "%s/observation-token" $sec) }}{{ end -}}
{{- if $o.signature }}{{ $_ := set $p "secretFile" (printf "%s/observation-secret" $sec) }}{{ end -}}
{{- if not $p }}{{ fail "server.observations: bearerToken or signature must be on" }}{{ end -}}
{{- if $o.urlTokens }}{{ $_ := set $p "urlTokensFile" (printf "%s/observation-url-tokens" $sec) }}{{ end -}}
{{- range $k := list "trust" "urlTrust" "cluster" -}}
{{- with index $o $k }}{{ $_ := set $p $k . }}{{ end -}}
{{- end -}}
{{- $_ := set $s "observations" $p -}}
{{- end -}}
{{- $_ := set $c "server" $s -}}
{{- toYaml $c -}}
{{- end -}}
