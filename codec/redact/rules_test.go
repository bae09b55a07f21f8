package redact

import (
	"strings"
	"testing"
)

// TestRules: each credential family is redacted in the shapes it takes in
// env files, yaml, JSON, code and prose, and look-alikes in ordinary code
// and text are left alone.
func TestRules(t *testing.T) {
	r, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	const awsSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	for _, c := range []struct{ name, in, want string }{
		{"aws id", "id AKIAIOSFODNN7EXAMPLE", "id [redacted:aws_access_key]"},
		{"aws secret env", "AWS_SECRET_ACCESS_KEY=" + awsSecret + "\n", "AWS_SECRET_ACCESS_KEY=[redacted:aws_secret_key]\n"},
		{"aws secret ini", "aws_secret_access_key = " + awsSecret, "aws_secret_access_key = [redacted:aws_secret_key]"},
		{"aws secret json", `{"SecretAccessKey": "` + awsSecret + `"}`, `{"SecretAccessKey": "[redacted:aws_secret_key]"}`},
		{"aws pair csv", "AKIAIOSFODNN7EXAMPLE," + awsSecret, "[redacted:aws_access_key],[redacted:aws_secret_key]"},
		{"aws pair after marker", "[redacted:aws_access_key]:" + awsSecret + " end", "[redacted:aws_access_key]:[redacted:aws_secret_key] end"},
		{"aws pair json", `"AccessKeyId": "AKIAIOSFODNN7EXAMPLE", "Secret": "` + awsSecret + `"`, `"AccessKeyId": "[redacted:aws_access_key]", "Secret": "[redacted:aws_secret_key]"`},
		{"jwt", "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U ok", "Bearer [redacted:jwt] ok"},
		{"env password", "DB_PASSWORD=hunter22\n", "DB_PASSWORD=[redacted:password]\n"},
		{"env password short word", "PASSWORD=letmein", "PASSWORD=[redacted:password]"},
		{"env line flattened", "DB_PASSWORD=Xq7pLm2v DB_HOST=localhost", "DB_PASSWORD=[redacted:password] DB_HOST=localhost"},
		{"ini secret", "client_secret = 9f8e7d6c5b4a3f2e1d0c", "client_secret = [redacted:secret]"},
		{"yaml password", "  password: s3cr3t!pw\n", "  password: [redacted:password]\n"},
		{"yaml token", "token: 'Zk29fjQ0xPq81LmN'\n", "token: '[redacted:secret]'\n"},
		{"json password", `{"user":"bob","password": "correcthorse"}`, `{"user":"bob","password": "[redacted:password]"}`},
		{"json api_key", `{"api_key":"a1b2c3d4e5f6g7h8i9j0"}`, `{"api_key":"[redacted:secret]"}`},
		{"escaped json", `"text":"set DB_PASSWORD=\"pa55word\" now"`, `"text":"set DB_PASSWORD=\"[redacted:password]\" now"`},
		{"escaped newline", `"text":"PASSWORD=pa55word\nnext"`, `"text":"PASSWORD=[redacted:password]\nnext"`},
		{"go literal", `password := "Tr0ub4dor&3"`, `password := "[redacted:password]"`},
		{"camel apiKey", `apiKey: "AbCd1234EfGh5678IjKl"`, `apiKey: "[redacted:secret]"`},
		{"header-like", "X-Api-Key: q8Zr2LmN5pW7tY1vB3xC", "X-Api-Key: [redacted:secret]"},
		{"url password", "DATABASE_URL=postgres://app:Sup3rS3cret@db:5432/app", "DATABASE_URL=postgres://app:[redacted:url_password]@db:5432/app"},
		{"pem", "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----", "[redacted:private_key]"},
		{"github classic", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "[redacted:github_token]"},
		{"github fine-grained", "github_pat_11ABCDEFG0123456789abc_defghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVW", "[redacted:github_token]"},
		{"gitlab", "glpat-abcdefghij0123456789", "[redacted:gitlab_token]"},
		{"slack", "xoxb-1234567890-abcdefghijkl", "[redacted:slack_token]"},
		{"slack webhook", "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX", "https://[redacted:slack_webhook]"},
		{"stripe", "sk_live_abcdefghijklmnop1234", "[redacted:stripe_key]"},
		{"google api", "AIzaSyA-abcdefghijklmnopqrstuvwxyz01234", "[redacted:google_api_key]"},
		{"google oauth", "ya29.a0AfH6SMBabcdefghijklmnop", "[redacted:google_oauth]"},
		{"npm", "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789", "//registry.npmjs.org/:_authToken=[redacted:npm_token]"},
		{"huggingface", "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", "[redacted:huggingface_token]"},
		{"anthropic", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "[redacted:anthropic_key]"},
		{"openai", "sk-proj-abcdefghijklmnopqrstuvwxyz0123", "[redacted:openai_key]"},

		// Look-alikes that are not secrets.
		{"getenv", `password = os.Getenv("DB_PASSWORD")`, ""},
		{"go token", "token := tok.Next()", ""},
		{"go short token", `token := "abc"`, ""},
		{"env reference", "PASSWORD=${DB_PASSWORD}", ""},
		{"template", `token: "{{ .Values.token }}"`, ""},
		{"field path", "password = cfg.Password", ""},
		{"await", "const password = await getPassword()", ""},
		{"kwarg", "connect(password=password)", ""},
		{"comparison", `if password == "x" {`, ""},
		{"max_tokens", `{"max_tokens": 4096, "token_type": "bearer", "input_tokens": 12}`, ""},
		{"word token", `{"token": "end_of_sentence_marker"}`, ""},
		{"yaml prose", "Password: required\nSecret: none", ""},
		{"schema", `"password": {"type": "string"}`, ""},
		{"struct tag", "Password string `json:\"password\"`", ""},
		{"url no password", "https://user@example.com/path and https://example.com:8443/x", ""},
		{"plain prose", "Keep the secret: it is a token of trust.", ""},
		{"disk usage", "see disk-usage-report-2024-01-01-final.txt", ""},
		{"marker", "password=[redacted:password]", ""},
	} {
		want := c.want
		if want == "" {
			want = c.in
		}
		if got := r.String(c.in); got != want {
			t.Errorf("%s: String(%q)\n got %q\nwant %q", c.name, c.in, got, want)
		}
		if got := r.String(want); got != want {
			t.Errorf("%s: redacting twice changes %q to %q", c.name, want, got)
		}
	}
}

// TestCut: a stream may cut the bytes it has seen at Cut without splitting
// a secret: redacting b[:cut] and then the rest with more bytes gives what
// redacting everything at once gives.
func TestCut(t *testing.T) {
	r, _ := New(nil)
	for _, in := range []string{
		"line one\nDB_PASSWORD = hunter22\nend",
		`{"password": "correcthorse", "n": 1}`,
		"AKIAIOSFODNN7EXAMPLE\n  wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
		"x postgres://app:Sup3rS3cret@db/app y",
		"a eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N b",
	} {
		b := []byte(in)
		want := string(r.Bytes(b))
		for i := 1; i < len(b); i++ {
			c := Cut(b[:i], 4096)
			got := string(r.Bytes(b[:c])) + string(r.Bytes(b[c:]))
			if got != want {
				t.Fatalf("%q cut at %d (held from %d):\n got %q\nwant %q", in, i, c, got, want)
			}
		}
	}
}

func TestMaybe(t *testing.T) {
	r, _ := New(nil)
	for _, s := range []string{"DB_PASSWORD=x", "postgres://a:b@c", "eyJhbGciOi"} {
		if !r.Maybe(s) {
			t.Errorf("Maybe(%q) = false", s)
		}
	}
	if r.Maybe(strings.Repeat("plain text ", 10)) {
		t.Error("Maybe(plain text) = true")
	}
}

func TestJSON(t *testing.T) {
	r, _ := New(nil)
	for _, c := range []struct{ in, want string }{
		{`{"text":"key sk-ant-api03-abcdefghijklmnopqrstuvwxyz"}`, `{"text":"key [redacted:anthropic_key]"}`},
		{`{"text":"DB_PASSWORD=\"pa55word\"\n"}`, `{"text":"DB_PASSWORD=\"[redacted:password]\"\n"}`},
		// A block that starts in one string and ends in another is
		// redacted string by string, and the document stays valid.
		{`{"a":"-----BEGIN RSA PRIVATE KEY-----\nMIIE","b":"x -----END RSA PRIVATE KEY-----"}`, `{"a":"-----BEGIN RSA PRIVATE KEY-----\nMIIE","b":"x -----END RSA PRIVATE KEY-----"}`},
		{`{"n":1}`, `{"n":1}`},
	} {
		if got := string(r.JSON([]byte(c.in))); got != c.want {
			t.Errorf("JSON(%s)\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}
