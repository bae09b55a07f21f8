// Package redact finds secrets in text and replaces each with a marker,
// [redacted:<kind>]:
//
//   - well-known key formats: Anthropic, OpenAI, GitHub (classic and
//     fine-grained), GitLab, AWS access key ids and secret keys, Google
//     API keys and OAuth tokens, Slack tokens and webhooks, Stripe, npm
//     and Hugging Face tokens, JWTs, PEM private key blocks;
//   - passwords in URLs (scheme://user:password@host);
//   - values assigned to secret-looking names in env, ini, yaml, JSON
//     and code (password=..., "api_key": "...", SECRET: ...): a password
//     name's literal value, or a high-entropy literal for a token, key or
//     secret name; references (os.Getenv("X"), ${X}, cfg.Password) are
//     left alone;
//   - patterns a user adds.
//
// The proxy applies it to everything it records, and the engine to
// everything it derives, indexes and exports. A Redactor is safe for
// concurrent use.
//
// It imports nothing of bbengine's, like every codec package.
package redact
