package memtext

import "strings"

// optionRoles maps a tool, library or service a decision may choose to the
// job it does, which is the decision's subject: "switch to Atlas" and "use
// goose" are both about the migration tool. Keys are lowercased names.
var optionRoles = map[string]string{}

// cueRoles maps a word that names a job to the subject it gives a
// decision that mentions it ("for migrations", "to run the migrations").
var cueRoles = map[string]string{}

func init() {
	add := func(m map[string]string, role, names string) {
		for _, n := range strings.Fields(names) {
			m[n] = role
		}
	}
	add(optionRoles, "migration tool", "goose atlas flyway liquibase alembic golang-migrate migrate dbmate sqitch knex-migrate prisma-migrate tern")
	add(optionRoles, "logging library", "zap zerolog logrus slog log15 glog klog winston pino bunyan loguru structlog log4j logback serilog tracing-subscriber")
	add(optionRoles, "argument parser", "clap cobra urfave/cli kingpin argparse click typer docopt yargs commander pflag kong")
	add(optionRoles, "ci system", "jenkins circleci travis buildkite drone gitlab-ci teamcity github-actions")
	add(optionRoles, "package manager", "npm pnpm yarn bun pip pipenv poetry uv conda cargo-binstall")
	add(optionRoles, "build backend", "hatchling hatch setuptools flit flit-core pdm pdm-backend maturin scikit-build")
	add(optionRoles, "build system", "makefile makefiles cmake bazel meson ninja buck buck2 pants scons gradle maven sbt premake xmake")
	add(optionRoles, "bundler", "webpack vite esbuild rollup parcel turbopack rspack tsup")
	add(optionRoles, "test framework", "pytest unittest nose jest vitest mocha jasmine ava testify ginkgo gocheck rspec minitest")
	add(optionRoles, "linter", "eslint ruff flake8 pylint golangci-lint staticcheck revive clippy rubocop biome oxlint")
	add(optionRoles, "formatter", "prettier black gofmt gofumpt rustfmt isort yapf autopep8 dprint")
	add(optionRoles, "database", "postgres postgresql mysql mariadb sqlite sqlite3 mongodb mongo cockroachdb dynamodb cassandra duckdb")
	add(optionRoles, "cache", "redis memcached valkey dragonfly")
	add(optionRoles, "queue", "kafka rabbitmq nats sqs pubsub celery sidekiq bullmq")
	add(optionRoles, "http client", "axios fetch requests httpx aiohttp resty reqwest got")
	add(optionRoles, "web framework", "express fastapi flask django gin echo fiber chi gorilla/mux httprouter rails sinatra nestjs koa hono actix axum")
	add(optionRoles, "ui framework", "react vue svelte angular solid preact htmx")
	add(optionRoles, "styling", "tailwind tailwindcss bootstrap sass scss styled-components emotion")
	add(optionRoles, "orm", "gorm ent sqlalchemy sequelize typeorm prisma drizzle sqlx sqlc diesel activerecord")
	add(optionRoles, "locking", "mutex rwmutex sync.mutex sync.rwmutex spinlock semaphore")
	add(optionRoles, "serialization format", "json protobuf msgpack cbor avro yaml toml")
	add(optionRoles, "container runtime", "docker podman containerd")
	add(optionRoles, "numeric precision", "bf16 fp16 fp32 fp8 int8 bfloat16 float16 float32 tf32")
	add(optionRoles, "error tracking", "sentry rollbar bugsnag honeybadger")
	add(optionRoles, "metrics", "prometheus datadog grafana statsd influxdb victoriametrics newrelic")
	add(optionRoles, "tracing", "opentelemetry otel jaeger zipkin tempo honeycomb")
	add(optionRoles, "secrets manager", "vault sops doppler 1password infisical")
	add(optionRoles, "feature flags", "launchdarkly unleash flagsmith growthbook")
	add(optionRoles, "search engine", "elasticsearch opensearch meilisearch typesense solr algolia")
	add(optionRoles, "vector store", "pinecone weaviate qdrant pgvector chroma milvus faiss")
	add(optionRoles, "auth provider", "auth0 clerk keycloak cognito okta supabase-auth")
	add(optionRoles, "object storage", "s3 gcs minio r2")
	add(optionRoles, "infrastructure tool", "terraform pulumi opentofu cloudformation cdk ansible")
	add(optionRoles, "orchestrator", "kubernetes k8s nomad ecs swarm")
	add(optionRoles, "reverse proxy", "nginx caddy traefik envoy haproxy")
	add(optionRoles, "api style", "grpc rest-api restful graphql trpc")
	add(optionRoles, "password hashing", "bcrypt argon2 argon2id scrypt pbkdf2")
	add(optionRoles, "validation library", "pydantic marshmallow zod yup joi valibot")
	add(optionRoles, "dataframe library", "pandas polars dask")
	add(optionRoles, "ml framework", "pytorch torch tensorflow jax keras")
	add(optionRoles, "experiment tracking", "wandb mlflow neptune comet tensorboard")
	add(optionRoles, "optimizer", "adam adamw sgd lion adafactor")
	add(optionRoles, "deployment", "helm kustomize argocd argo flux")
	add(optionRoles, "error handling library", "anyhow thiserror eyre snafu color-eyre pkg/errors")
	add(optionRoles, "websocket library", "ws socket.io uwebsockets gorilla/websocket nhooyr.io/websocket websockets")
	add(optionRoles, "scheduler", "airflow dagster prefect luigi cron crontab sidekiq-cron quartz temporal")
	add(optionRoles, "image library", "pillow pyvips libvips imagemagick sharp jimp")
	add(optionRoles, "data fetching library", "swr tanstack react-query apollo urql rtk-query")
	add(optionRoles, "state management", "redux zustand mobx jotai recoil pinia vuex redux-toolkit")
	add(optionRoles, "token signing", "rs256 es256 hs256 eddsa ed25519 ps256")
	add(optionRoles, "job queue", "oban resque good_job delayed_job rq dramatiq")

	add(cueRoles, "migration tool", "migration migrations migrate migrating schema-migrations")
	add(cueRoles, "logging library", "logging logger loggers")
	add(cueRoles, "argument parser", "argument arguments args flags cli-parsing")
	add(cueRoles, "ci system", "ci pipeline pipelines")
	add(cueRoles, "package manager", "package-manager")
	add(cueRoles, "build backend", "build-backend build-system")
	add(cueRoles, "bundler", "bundler bundling")
	add(cueRoles, "test framework", "test-runner test-framework")
	add(cueRoles, "linter", "linter linting lint")
	add(cueRoles, "formatter", "formatter formatting")
	add(cueRoles, "cache", "cache caching")
	add(cueRoles, "orm", "orm")
	add(cueRoles, "database", "database db datastore")
	add(cueRoles, "queue", "queue queues queueing")
	add(cueRoles, "http client", "http-client")
	add(cueRoles, "styling", "styling css")
	add(cueRoles, "locking", "lock locks locking mutex")
	add(cueRoles, "retries", "retry retries retrying backoff")
	add(cueRoles, "rate limit key", "rate-limit rate-limiting ratelimit")
	add(cueRoles, "authentication", "auth authentication login")
	add(cueRoles, "deployment", "deploy deploys deployment hosting")
	add(cueRoles, "numeric precision", "precision")
	add(cueRoles, "error tracking", "error-tracking crash-reporting")
	add(cueRoles, "metrics", "metrics monitoring")
	add(cueRoles, "tracing", "tracing traces")
	add(cueRoles, "secrets manager", "secrets")
	add(cueRoles, "feature flags", "feature-flags")
	add(cueRoles, "vector store", "embeddings vector-store")
	add(cueRoles, "object storage", "object-storage")
	add(cueRoles, "infrastructure tool", "infra infrastructure")
	add(cueRoles, "orchestrator", "orchestration orchestrator")
	add(cueRoles, "reverse proxy", "reverse-proxy")
	add(cueRoles, "password hashing", "hashing")
	add(cueRoles, "validation library", "validation")
	add(cueRoles, "optimizer", "optimizer")
	add(cueRoles, "web framework", "router routing")
	add(cueRoles, "serialization format", "serialization encoding wire-format")
}

// twoWordCues are cues of two words, joined by '-' before lookup.
var twoWordCues = map[string]bool{
	"package manager": true, "build backend": true, "build system": true, "test runner": true, "test framework": true,
	"http client": true, "rate limit": true, "rate limiting": true, "cli parsing": true, "schema migrations": true,
	"error tracking": true, "crash reporting": true, "feature flags": true, "vector store": true, "object storage": true,
	"reverse proxy": true, "wire format": true,
}

// roleOfWords returns the subject a run of lowercased words names, and
// the word that named it.
func roleOfWords(ws []string, roles map[string]string) (string, string) {
	for i, w := range ws {
		if i+1 < len(ws) && twoWordCues[w+" "+ws[i+1]] {
			if r, ok := cueRoles[w+"-"+ws[i+1]]; ok {
				return r, w + " " + ws[i+1]
			}
		}
		if r, ok := roles[w]; ok {
			return r, w
		}
	}
	return "", ""
}

// optionRole returns the job of an option phrase ("atlas", "the goose
// cli"), and the name that says it.
func optionRole(opt string) (string, string) {
	ws := strings.Fields(opt)
	if r, ok := optionRoles[opt]; ok {
		return r, opt
	}
	for _, w := range ws {
		if r, ok := optionRoles[strings.Trim(w, "`'\"")]; ok {
			return r, w
		}
	}
	return "", ""
}

// subjectOf fills f.Subject and f.SubjectFrom: what the decision is about
// and why. In order: a job named by a chosen or dropped option ("atlas"
// is a migration tool), the subject the sentence names ("for the cache,
// …", "switch the logger …", "make the cache key …") read as a job when it
// names one, a job word in the sentence ("to run the migrations"), then
// one in the sentence before. Nothing found leaves them empty.
func (a *analysis) subjectOf(f *Finding, prev string) {
	if f.SubjectFrom != "" {
		return
	}
	named := f.Subject
	switch named {
	case "us", "me", "you", "them", "it", "this", "that", "everyone", "everybody":
		// "it handles reconnection for us": no subject.
		named = ""
	}
	if named != "" {
		// The head of the named phrase says the job: "retry queue" is a
		// queue, "webhook retries" are retries.
		ws := strings.Fields(named)
		if n := len(ws); n >= 2 {
			if r, w := roleOfWords(ws[n-2:], cueRoles); r != "" && strings.Contains(w, " ") {
				f.Subject, f.SubjectFrom = r, "names "+quote(w)
				return
			}
		}
		if r, w := roleOfWords(ws[len(ws)-1:], cueRoles); r != "" {
			f.Subject, f.SubjectFrom = r, "names "+quote(w)
			return
		}
		if r, _ := optionRole(named); r != "" {
			f.Subject, f.SubjectFrom = r, "names "+quote(named)
			return
		}
	}
	for _, opts := range [][]string{f.Chooses, f.Replaces} {
		for _, o := range opts {
			if r, w := optionRole(o); r != "" {
				f.Subject, f.SubjectFrom = r, quote(w)+" is "+article(r)+" "+r
				return
			}
		}
	}
	if named != "" {
		f.Subject, f.SubjectFrom = named, "named in the sentence"
		return
	}
	ws := words(a.text[a.sn.s:a.sn.e])
	if r, w := roleOfWords(ws, cueRoles); r != "" {
		f.Subject, f.SubjectFrom = r, "the sentence says "+quote(w)
		return
	}
	if prev != "" {
		if r, w := roleOfWords(words(prev), cueRoles); r != "" {
			f.Subject, f.SubjectFrom = r, "the sentence before says "+quote(w)
			return
		}
	}
	// A file or directory the sentence names is the area it decides
	// about: "Use a sync.Map in cache/lru.go."
	for _, w := range strings.Fields(a.text[a.sn.s:a.sn.e]) {
		w = strings.Trim(w, "`'\"()[],.;:!?*")
		if isPath(w) {
			f.Subject, f.SubjectFrom = w, "the sentence names the file "+quote(w)
			return
		}
	}
}

// isPath reports whether w reads as a file or directory path of a
// repository: a slash between name characters, or a name with a source
// file extension, and no URL.
func isPath(w string) bool {
	if len(w) < 3 || strings.Contains(w, "://") || strings.HasPrefix(w, "/") && strings.Count(w, "/") < 2 {
		return false
	}
	for _, c := range w {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/._-", c)) {
			return false
		}
	}
	if i := strings.IndexByte(w, '/'); i > 0 && i < len(w)-1 {
		return true
	}
	for _, ext := range []string{".go", ".py", ".ts", ".tsx", ".js", ".rs", ".ex", ".exs", ".rb", ".java", ".toml", ".yaml", ".yml", ".json", ".sql", ".css", ".md"} {
		if strings.HasSuffix(w, ext) && len(w) > len(ext) {
			return true
		}
	}
	return false
}

func quote(s string) string { return "\"" + s + "\"" }

// SubjectOf returns the subject that texts (a question and its header,
// say) name, and why: a job word or a known option in them, else the
// last text itself when it is a short label. It is what a decision made
// by answering a question is about.
func SubjectOf(texts ...string) (subject, from string) {
	for _, t := range texts {
		if r, w := roleOfWords(words(t), cueRoles); r != "" {
			return r, "the question says " + quote(w)
		}
		if r, w := roleOfWords(words(t), optionRoles); r != "" {
			return r, "the question names " + quote(w)
		}
	}
	if n := len(texts); n > 0 {
		if l := strings.ToLower(strings.TrimSpace(texts[n-1])); l != "" && len(strings.Fields(l)) <= 3 {
			return l, "the question's header"
		}
	}
	return "", ""
}

// ToolAnswers returns the question and answer pairs of a question tool's
// result ("User has answered your questions: \"Q\"=\"A\", …").
func ToolAnswers(result string) [][2]string {
	var out [][2]string
	s := result
	for {
		i := strings.Index(s, "\"=\"")
		if i < 0 {
			return out
		}
		qs := strings.LastIndex(s[:i], "\"")
		// The question opens at the quote before it that follows the
		// colon or the comma of the previous pair.
		for qs > 0 && !(qs >= 2 && (s[qs-2:qs] == ": " || s[qs-2:qs] == ", ") || qs >= 1 && s[qs-1] == ':') {
			qs = strings.LastIndex(s[:qs], "\"")
		}
		if qs < 0 {
			return out
		}
		rest := s[i+3:]
		ae := strings.Index(rest, "\"")
		for ae >= 0 && ae+1 < len(rest) && !(rest[ae+1] == ',' || rest[ae+1] == '.' || rest[ae+1] == ' ') {
			n := strings.Index(rest[ae+1:], "\"")
			if n < 0 {
				ae = -1
				break
			}
			ae += 1 + n
		}
		if ae < 0 {
			return out
		}
		out = append(out, [2]string{s[qs+1 : i], rest[:ae]})
		s = rest[ae+1:]
	}
}

// article returns "an" before a vowel, else "a".
func article(s string) string {
	if s != "" && strings.ContainsRune("aeiou", rune(s[0])) {
		return "an"
	}
	return "a"
}

// ToolRole returns the job of the known tool s names ("tempo via otlp":
// tracing), or "" when it names none.
func ToolRole(s string) string {
	r, _ := optionRole(strings.ToLower(s))
	return r
}
