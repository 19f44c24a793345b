{{/* Chart name. */}}
{{- define "tasklane.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: release-chart, unless the release name already holds the chart name. */}}
{{- define "tasklane.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Chart label value. */}}
{{- define "tasklane.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Standard labels. */}}
{{- define "tasklane.labels" -}}
helm.sh/chart: {{ include "tasklane.chart" . }}
{{ include "tasklane.selectorLabels" . }}
app.kubernetes.io/version: {{ (.Values.image.tag | default .Chart.AppVersion) | toString | trunc 63 | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tasklane
{{- end }}

{{/* Selector labels (add app.kubernetes.io/component per workload). */}}
{{- define "tasklane.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tasklane.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* ServiceAccount name. */}}
{{- define "tasklane.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "tasklane.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Image reference. */}}
{{- define "tasklane.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) }}
{{- end }}

{{/* The database CA certificate's mount (database.caSecret), or nothing. */}}
{{- define "tasklane.databaseCaMount" -}}
{{- if .Values.database.caSecret }}
- name: database-ca
  mountPath: /etc/tasklane-db
  readOnly: true
{{- end }}
{{- end }}

{{/* The database CA certificate's volume, or nothing. */}}
{{- define "tasklane.databaseCaVolume" -}}
{{- if .Values.database.caSecret }}
- name: database-ca
  secret:
    secretName: {{ .Values.database.caSecret }}
    items:
      - key: {{ .Values.database.caSecretKey }}
        path: {{ .Values.database.caSecretKey }}
{{- end }}
{{- end }}

{{/* Secret holding the database URL. */}}
{{- define "tasklane.databaseSecretName" -}}
{{- if .Values.database.existingSecret }}
{{- .Values.database.existingSecret }}
{{- else }}
{{- printf "%s-database" (include "tasklane.fullname" .) }}
{{- end }}
{{- end }}

{{/*
Key of the direct URL (TASKLANE_DIRECT_DATABASE_URL: the database bypassing a pooler)
in the database Secret, or nothing when none is configured: database.directSecretKey in
an existing Secret; in the chart-made Secret that key (default `directUrl`) when
database.directUrl is set.
*/}}
{{- define "tasklane.directSecretKey" -}}
{{- if .Values.database.existingSecret }}
{{- .Values.database.directSecretKey }}
{{- else if .Values.database.directUrl }}
{{- .Values.database.directSecretKey | default "directUrl" }}
{{- end }}
{{- end }}

{{/*
Data of a chart-made database Secret: the URL, and the direct URL when set.
*/}}
{{- define "tasklane.databaseSecretData" -}}
{{ .Values.database.secretKey }}: {{ .Values.database.url | b64enc | quote }}
{{- with include "tasklane.directSecretKey" . }}
{{ . }}: {{ $.Values.database.directUrl | b64enc | quote }}
{{- end }}
{{- end }}

{{/* Fails the render on values tasklane would reject at start. */}}
{{- define "tasklane.validate" -}}
{{- if and (not .Values.database.existingSecret) (not .Values.database.url) }}
{{- fail "set database.existingSecret (a Secret holding the database URL) or database.url" }}
{{- end }}
{{- if not .Values.database.secretKey }}
{{- fail "database.secretKey must not be empty" }}
{{- end }}
{{- if and .Values.database.existingSecret .Values.database.directUrl (not .Values.database.directSecretKey) }}
{{- fail "database.directUrl is not used with database.existingSecret: put the direct URL in that Secret and name its key in database.directSecretKey" }}
{{- end }}
{{- if and (not .Values.database.existingSecret) .Values.database.directSecretKey (not .Values.database.directUrl) }}
{{- fail "database.directSecretKey names the direct URL's key, but there is no database.existingSecret holding it and database.directUrl is empty" }}
{{- end }}
{{- if eq (include "tasklane.directSecretKey" .) .Values.database.secretKey }}
{{- fail "database.directSecretKey must differ from database.secretKey: the direct URL bypasses the pooler the main URL goes through" }}
{{- end }}
{{- range $name, $config := dict "config" .Values.config "workers.config" (mergeOverwrite (deepCopy .Values.config) .Values.workers.config) }}
{{- $batch := int $config.claimBatch }}
{{- if or (lt $batch 1) (gt $batch 256) }}
{{- fail (printf "%s.claimBatch must be within 1..256, not %v" $name $config.claimBatch) }}
{{- end }}
{{- if not (has (toString $config.route) (list "local" "external")) }}
{{- fail (printf "%s.route must be local or external, not %v" $name $config.route) }}
{{- end }}
{{- end }}
{{- if hasKey .Values.workers.config "roles" }}
{{- fail "workers.config.roles is not used: set workers.roles" }}
{{- end }}
{{- if and .Values.workers.keda.enabled (not .Values.workers.enabled) }}
{{- fail "workers.keda.enabled scales the worker Deployment: set workers.enabled too" }}
{{- end }}
{{- if and .Values.workers.autoscaling.enabled (not .Values.workers.enabled) }}
{{- fail "workers.autoscaling.enabled scales the worker Deployment: set workers.enabled too" }}
{{- end }}
{{- if and .Values.workers.keda.enabled .Values.workers.autoscaling.enabled }}
{{- fail "workers.keda.enabled and workers.autoscaling.enabled both make an HPA for the worker Deployment: choose one" }}
{{- end }}
{{- range $name, $a := dict "autoscaling" .Values.autoscaling "workers.autoscaling" .Values.workers.autoscaling }}
{{- if and $a.enabled (gt (int $a.minReplicas) (int $a.maxReplicas)) }}
{{- fail (printf "%s.minReplicas (%v) must not exceed maxReplicas (%v)" $name $a.minReplicas $a.maxReplicas) }}
{{- end }}
{{- end }}
{{- if and .Values.autoscaling.enabled (not (dig "requests" "cpu" "" .Values.resources)) }}
{{- fail "autoscaling.enabled scales on CPU utilization, which needs resources.requests.cpu" }}
{{- end }}
{{- if and .Values.workers.autoscaling.enabled (not (dig "requests" "cpu" "" (.Values.workers.resources | default .Values.resources))) }}
{{- fail "workers.autoscaling.enabled scales on CPU utilization, which needs workers.resources.requests.cpu (or resources.requests.cpu)" }}
{{- end }}
{{- end }}

{{/*
terminationGracePeriodSeconds of a pod with config .config: on SIGTERM the binary first
answers /readyz 503 for readinessDrainMs (rounded up to whole seconds), then gives
requests and running attempts shutdownGraceSeconds, then hands back leases and closes
the pool; the margin covers that last step and a slow node.
*/}}
{{- define "tasklane.terminationGrace" -}}
{{- $drainSeconds := div (add (int64 .config.readinessDrainMs) 999) 1000 }}
{{- add (int64 .config.shutdownGraceSeconds) $drainSeconds (int64 .root.Values.terminationGraceMarginSeconds) }}
{{- end }}

{{/*
Fewest pods a Deployment runs: its replica count, or the autoscaler's minimum.
Takes a dict: replicas, autoscaling (an HPA values block), keda (optional).
*/}}
{{- define "tasklane.minReplicas" -}}
{{- if and .keda .keda.enabled }}
{{- .keda.minReplicaCount | int }}
{{- else if .autoscaling.enabled }}
{{- .autoscaling.minReplicas | int }}
{{- else }}
{{- .replicas | int }}
{{- end }}
{{- end }}

{{/*
Environment of a tasklane container: exactly one TASKLANE_* variable per field of
ServeConfig (src/config.rs), plus DATABASE_URL and TASKLANE_LOG;
TASKLANE_DIRECT_DATABASE_URL only when a direct URL is configured (unset, the binary
uses DATABASE_URL for everything).
Takes a dict: root (the chart context), config (the merged config values), roles.
*/}}
{{- define "tasklane.env" -}}
{{- $root := .root }}
{{- $c := .config -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "tasklane.databaseSecretName" $root }}
      key: {{ $root.Values.database.secretKey }}
{{- with include "tasklane.directSecretKey" $root }}
- name: TASKLANE_DIRECT_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "tasklane.databaseSecretName" $root }}
      key: {{ . }}
{{- end }}
- name: TASKLANE_LISTEN
  value: {{ printf "0.0.0.0:%v" $root.Values.containerPort | quote }}
{{- if $root.Values.taskTypes }}
- name: TASKLANE_TASK_TYPES
  value: /etc/tasklane/task-types.toml
{{- end }}
- name: TASKLANE_ROLES
  value: {{ .roles | quote }}
- name: TASKLANE_NO_MIGRATE
  value: {{ (not $root.Values.migrate.onStart) | toString | quote }}
- name: TASKLANE_REPLICA_NAME
{{- if $c.replicaName }}
  value: {{ $c.replicaName | quote }}
{{- else }}
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
{{- end }}
- name: TASKLANE_POOL_SIZE
  value: {{ $c.poolSize | int64 | toString | quote }}
- name: TASKLANE_STATEMENT_TIMEOUT_MS
  value: {{ $c.statementTimeoutMs | int64 | toString | quote }}
- name: TASKLANE_SUBMIT_GROUPS
  value: {{ (kindIs "invalid" $c.submitGroups | ternary (min 2 (int64 $c.poolSize)) $c.submitGroups) | int64 | toString | quote }}
- name: TASKLANE_CLAIMERS
  value: {{ $c.claimers | int64 | toString | quote }}
- name: TASKLANE_CONCURRENCY
  value: {{ $c.concurrency | int64 | toString | quote }}
- name: TASKLANE_CLAIM_BATCH
  value: {{ $c.claimBatch | int64 | toString | quote }}
- name: TASKLANE_ROUTE
  value: {{ $c.route | toString | quote }}
- name: TASKLANE_POLL_INTERVAL_MS
  value: {{ $c.pollIntervalMs | int64 | toString | quote }}
- name: TASKLANE_LISTEN_NOTIFY
  value: {{ $c.listenNotify | toString | quote }}
- name: TASKLANE_NOTIFY_DEBOUNCE_MS
  value: {{ $c.notifyDebounceMs | int64 | toString | quote }}
- name: TASKLANE_RESCUE_INTERVAL_MS
  value: {{ $c.rescueIntervalMs | int64 | toString | quote }}
- name: TASKLANE_DEADLINE_INTERVAL_MS
  value: {{ $c.deadlineIntervalMs | int64 | toString | quote }}
- name: TASKLANE_REPLICA_TTL_SECONDS
  value: {{ $c.replicaTtlSeconds | int64 | toString | quote }}
- name: TASKLANE_SHUTDOWN_GRACE_SECONDS
  value: {{ $c.shutdownGraceSeconds | int64 | toString | quote }}
- name: TASKLANE_MAX_INPUT_BYTES
  value: {{ $c.maxInputBytes | int64 | toString | quote }}
- name: TASKLANE_MAX_BODY_BYTES
  value: {{ ($c.maxBodyBytes | default (add (int64 $c.maxInputBytes) 65536)) | int64 | toString | quote }}
- name: TASKLANE_READINESS_DRAIN_MS
  value: {{ $c.readinessDrainMs | int64 | toString | quote }}
- name: TASKLANE_MAX_WAIT_SECONDS
  value: {{ $c.maxWaitSeconds | int64 | toString | quote }}
- name: TASKLANE_PRUNE_BATCH
  value: {{ $c.pruneBatch | int64 | toString | quote }}
- name: TASKLANE_RETENTION_SECONDS
  value: {{ $c.retentionSeconds | int64 | toString | quote }}
- name: TASKLANE_PRUNE_INTERVAL_MS
  value: {{ $c.pruneIntervalMs | int64 | toString | quote }}
- name: TASKLANE_WEBHOOK_ALLOW_CIDRS
  value: {{ $c.webhookAllowCidrs | toString | quote }}
- name: TASKLANE_WEBHOOK_RETRY_SCHEDULE
  value: {{ $c.webhookRetrySchedule | toString | quote }}
- name: TASKLANE_WEBHOOK_CONCURRENCY
  value: {{ $c.webhookConcurrency | int64 | toString | quote }}
- name: TASKLANE_WEBHOOK_ENDPOINT_CONCURRENCY
  value: {{ $c.webhookEndpointConcurrency | int64 | toString | quote }}
- name: TASKLANE_WEBHOOK_TIMEOUT_SECONDS
  value: {{ $c.webhookTimeoutSeconds | int64 | toString | quote }}
- name: TASKLANE_WEBHOOK_CLAIM_SECONDS
  value: {{ $c.webhookClaimSeconds | int64 | toString | quote }}
- name: TASKLANE_CA_FILE
  value: {{ $c.caFile | toString | quote }}
- name: TASKLANE_UPSTREAM_CONNECT_TIMEOUT_MS
  value: {{ $c.upstreamConnectTimeoutMs | int64 | toString | quote }}
- name: TASKLANE_LOG
  value: {{ $root.Values.logLevel | quote }}
{{- with $root.Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
Pod template of a tasklane Deployment.
Takes a dict: root, component, config (merged), roles, resources.
*/}}
{{- define "tasklane.podTemplate" -}}
{{- $root := .root -}}
metadata:
  labels:
    {{- include "tasklane.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
    {{- with $root.Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    checksum/task-types: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
    {{- if not $root.Values.database.existingSecret }}
    {{- /* The direct URL joins the sum only when set: without one the sum stays as before. */}}
    {{- $sum := printf "%s/%s" $root.Values.database.secretKey $root.Values.database.url }}
    {{- with include "tasklane.directSecretKey" $root }}
    {{- $sum = printf "%s\n%s/%s" $sum . $root.Values.database.directUrl }}
    {{- end }}
    checksum/database: {{ $sum | sha256sum }}
    {{- end }}
    {{- with $root.Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "tasklane.serviceAccountName" $root }}
  automountServiceAccountToken: {{ $root.Values.serviceAccount.automountServiceAccountToken }}
  {{- with $root.Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $root.Values.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  # SIGTERM: readiness goes false for the readiness drain, HTTP drains, workers finish
  # or hand back their leases within the shutdown grace; the margin covers closing the
  # pool. So: ceil(readinessDrainMs / 1000) + shutdownGraceSeconds + margin.
  terminationGracePeriodSeconds: {{ include "tasklane.terminationGrace" (dict "root" $root "config" .config) }}
  securityContext:
    {{- toYaml $root.Values.podSecurityContext | nindent 4 }}
  containers:
    - name: tasklane
      image: {{ include "tasklane.image" $root }}
      imagePullPolicy: {{ $root.Values.image.pullPolicy }}
      args: ["serve"]
      env:
        {{- include "tasklane.env" . | nindent 8 }}
      ports:
        - name: http
          containerPort: {{ $root.Values.containerPort }}
          protocol: TCP
      livenessProbe:
        httpGet:
          path: /healthz
          port: http
        initialDelaySeconds: {{ $root.Values.probes.liveness.initialDelaySeconds }}
        periodSeconds: {{ $root.Values.probes.liveness.periodSeconds }}
        failureThreshold: {{ $root.Values.probes.liveness.failureThreshold }}
      readinessProbe:
        httpGet:
          path: /readyz
          port: http
        periodSeconds: {{ $root.Values.probes.readiness.periodSeconds }}
        failureThreshold: {{ $root.Values.probes.readiness.failureThreshold }}
      {{- with .resources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- toYaml $root.Values.securityContext | nindent 8 }}
      volumeMounts:
        - name: tmp
          mountPath: /tmp
        {{- if $root.Values.taskTypes }}
        - name: task-types
          mountPath: /etc/tasklane
          readOnly: true
        {{- end }}
        {{- include "tasklane.databaseCaMount" $root | nindent 8 }}
  volumes:
    - name: tmp
      emptyDir: {}
    {{- include "tasklane.databaseCaVolume" $root | nindent 4 }}
    {{- if $root.Values.taskTypes }}
    - name: task-types
      configMap:
        name: {{ include "tasklane.fullname" $root }}-task-types
    {{- end }}
  {{- if $root.Values.affinity }}
  affinity:
    {{- toYaml $root.Values.affinity | nindent 4 }}
  {{- else }}
  affinity:
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 100
          podAffinityTerm:
            topologyKey: kubernetes.io/hostname
            labelSelector:
              matchLabels:
                {{- include "tasklane.selectorLabels" $root | nindent 16 }}
                app.kubernetes.io/component: {{ .component }}
  {{- end }}
  {{- with $root.Values.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $root.Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $root.Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{/*
Claimable tasks of the route in-process workers serve: the WHERE clause of the local
(or, for external, the external) plain variant of sql/claim.sql without the
per-claimer filters (task types, app, scope, resource). The state filter implies the
predicates of the partial indexes of claimable tasks (task_queue_turns, and
task_queue_claimable with task_queue_behind; external: with task_queue_fallback, written
as an OR so the planner can combine them) of the mirror table task_queue, which holds
live tasks only, so the count never visits the finished history.
Takes a dict: route.
*/}}
{{- define "tasklane.claimableQuery" -}}
{{- if eq (toString .route) "external" -}}
SELECT count(*) FROM tasklane.task_queue WHERE (state IN ('queued', 'waiting_for_retry') OR state = 'waiting_for_external_fallback') AND run_at <= now() AND (deadline_at IS NULL OR deadline_at > now()) AND privacy = 'external_allowed'
{{- else -}}
SELECT count(*) FROM tasklane.task_queue WHERE state IN ('queued', 'waiting_for_retry') AND run_at <= now() AND (deadline_at IS NULL OR deadline_at > now())
{{- end }}
{{- end }}
