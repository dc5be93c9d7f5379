package redact

import (
	"strings"
	"testing"
)

// Tokens of the shapes issue 38 finding 11 found unredacted, assembled at
// run time so that no scanner flags this file.
var (
	opaqueBearer = "tok" + "_8f3kQ29xLmPz7RvT4wYb"
	apiKeyValue  = "k9Q2mZ8x" + "R4vT7wL1pN5s"
	azureOpenAI  = "0123456789abcdef" + "fedcba9876543210"
	urlPassword  = "s3cr3t" + "P%40ss"
	stripeLive   = "sk" + "_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
	stripeRK     = "rk" + "_live_" + "51H8dJ2eZvKYlo2C0aBcDeFg"
	hfToken      = "hf" + "_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567"
	awsID        = "AKIA" + "IOSFODNN7EXAMPLE"
	awsSecret    = "wJalrXUtnFEMI/K7MDENG" + "/bPxRfiCYEXAMPLEKEY"
	azureKey     = strings.Repeat("Zm9vYmFy", 10) + "QUJDREVGR0g=="
	basicCreds   = "dXNlcjpw" + "YXNzd29yZA==" // user:password
)

// TestShapes is issue 38 finding 11: every secret shape of the one table
// (patterns) is redacted where it appears, and text that only looks like
// one is left alone.
func TestShapes(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		// Bearer tokens of any shape, not only JWTs.
		{"bearer header", "Authorization: Bearer " + opaqueBearer, "Authorization: Bearer [REDACTED:bearer_token]"},
		{"bearer lowercase", "authorization: bearer " + opaqueBearer + "\n", "authorization: bearer [REDACTED:bearer_token]\n"},
		{"bearer in json", `{"Authorization":"Bearer ` + opaqueBearer + `"}`, `{"Authorization":"Bearer [REDACTED:bearer_token]"}`},
		{"bearer jwt keeps its name", "Bearer " + jwt, "Bearer [REDACTED:jwt]"},
		{"basic auth", "Authorization: Basic " + basicCreds, "Authorization: Basic [REDACTED:basic_auth]"},
		// API-key headers.
		{"x-api-key", "curl -H 'x-api-key: " + apiKeyValue + "' https://api", "curl -H 'x-api-key: [REDACTED:api_key_header]' https://api"},
		{"api-key azure openai", "api-key: " + azureOpenAI, "api-key: [REDACTED:api_key_header]"},
		{"api-key json", `"X-API-Key": "` + apiKeyValue + `"`, `"X-API-Key": "[REDACTED:api_key_header]"`},
		{"api-key json in a json string", `"{\"x-api-key\": \"` + apiKeyValue + `\"}"`, `"{\"x-api-key\": \"[REDACTED:api_key_header]\"}"`},
		{"azure subscription key", "Ocp-Apim-Subscription-Key: " + azureOpenAI, "Ocp-Apim-Subscription-Key: [REDACTED:api_key_header]"},
		// Passwords in URLs and DSNs.
		{"postgres dsn", "postgres://app:" + urlPassword + "@db.internal:5432/prod", "postgres://app:[REDACTED:url_password]@db.internal:5432/prod"},
		{"short password", "postgres://u:p@h/db", "postgres://u:[REDACTED:url_password]@h/db"},
		{"redis no user", "redis://:" + urlPassword + "@cache:6379", "redis://:[REDACTED:url_password]@cache:6379"},
		{"https basic", "git clone https://bot:" + urlPassword + "@git.example.com/r.git", "git clone https://bot:[REDACTED:url_password]@git.example.com/r.git"},
		// Stripe, Hugging Face.
		{"stripe sk_live", "STRIPE=" + stripeLive, "STRIPE=[REDACTED:stripe_key]"},
		{"stripe rk_live", "key " + stripeRK + ".", "key [REDACTED:stripe_key]."},
		{"hugging face", "HF_TOKEN=" + hfToken, "HF_TOKEN=[REDACTED:huggingface_token]"},
		// AWS secret access keys.
		{"aws secret beside id", awsID + " " + awsSecret, "[REDACTED:aws_access_key_id] [REDACTED:aws_secret_access_key]"},
		{"aws csv", "bot," + awsID + "," + awsSecret + "\n", "bot,[REDACTED:aws_access_key_id],[REDACTED:aws_secret_access_key]\n"},
		{"aws credentials file", "aws_secret_access_key = " + awsSecret, "aws_secret_access_key = [REDACTED:aws_secret_access_key]"},
		{"aws env", "export AWS_SECRET_ACCESS_KEY=" + awsSecret, "export AWS_SECRET_ACCESS_KEY=[REDACTED:aws_secret_access_key]"},
		{"aws sts json", `"SecretAccessKey": "` + awsSecret + `",`, `"SecretAccessKey": "[REDACTED:aws_secret_access_key]",`},
		// Azure storage and service bus keys, SAS signatures.
		{"azure connection string", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + azureKey + ";EndpointSuffix=core.windows.net",
			"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=[REDACTED:azure_key];EndpointSuffix=core.windows.net"},
		{"azure service bus", "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey=" + azureKey[:43] + "=",
			"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey=[REDACTED:azure_key]"},
		{"azure sas", "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&sig=" + "aBcD%2Bef0123456789GhIjKlMn%3D",
			"https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&sig=[REDACTED:azure_key]"},

		// What must stay as it is.
		{"bearer prose", "He was the Bearer of bad news.", ""},
		{"bearer word", "Bearer authentication sends a token; Bearer tokensareusuallyopaque.", ""},
		{"bearer placeholder", "Authorization: Bearer $TOKEN and Bearer ${{ secrets.T }} and Bearer <token>", ""},
		{"basic prose", "Basic usage: Basic dGVzdA and Basic auth", ""},
		{"api-key placeholder", "x-api-key: $API_KEY, api-key: <your key>, api-key header", ""},
		{"api-key words", "set the api-key: documentation", ""},
		{"urls without password", "see https://example.com:8080/path, http://user@host/x, git@github.com:org/r.git, http://[::1]:8080/", ""},
		{"url query with at", "https://host:443/?q=a@b and mailto:x@y.z", ""},
		{"hf inside words", "hf_hub_download(repo) my_hf_token_valueAbCdEfGhIjKlMnOpQrStUvWx01 hf_lowercase_identifier_that_is_long_enough", ""},
		{"stripe inside words", "risk_live_" + "4eC39HqLyjWDarjtT1zdp7dc and task_test_abc", ""},
		{"sha hashes", "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904 sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", ""},
		{"sha beside an aws id", awsID + " in commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904", "[REDACTED:aws_access_key_id] in commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904"},
		{"uuid", "request 123e4567-e89b-12d3-a456-426614174000 done", ""},
		{"base64 image", "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", ""},
		{"aws secret name without value", "set aws_secret_access_key in ~/.aws/credentials", ""},
		{"account key word", "the AccountKey= field and SharedAccessKey=<key>", ""},
	}
	var nilR *Redactor
	for _, tt := range tests {
		want := tt.want
		if want == "" {
			want = tt.in
		}
		if got := nilR.String(tt.in); got != want {
			t.Errorf("%s: String(%q) = %q, want %q", tt.name, tt.in, got, want)
		}
		if got := nilR.String(want); got != want {
			t.Errorf("%s: String of the redacted text %q = %q: not idempotent", tt.name, want, got)
		}
		if nilR.Holds([]byte(want)) {
			t.Errorf("%s: Holds(%q) = true, want false: a marker or harmless text is taken for a secret", tt.name, want)
		}
		b := []byte(tt.in)
		nilR.Fill(b)
		if len(b) != len(tt.in) || (tt.want == "" && string(b) != tt.in) {
			t.Errorf("%s: Fill(%q) = %q", tt.name, tt.in, b)
		}
	}
}

// TestShapesEveryOffset: each new shape is found at any offset and at the
// very end of the text.
func TestShapesEveryOffset(t *testing.T) {
	for _, s := range []string{
		"Bearer " + opaqueBearer, "x-api-key: " + apiKeyValue, "postgres://u:" + urlPassword + "@h",
		stripeLive, stripeRK, hfToken, awsID + " " + awsSecret, "aws_secret_access_key=" + awsSecret,
		"AccountKey=" + azureKey,
	} {
		for pad := 0; pad < 5; pad++ {
			for _, tail := range []string{"", " ", "\n tail"} {
				in := strings.Repeat(" ", pad) + s + tail
				got := New().String(in)
				for _, secret := range []string{opaqueBearer, apiKeyValue, urlPassword, stripeLive, stripeRK, hfToken, awsSecret, azureKey} {
					if strings.Contains(got, secret) {
						t.Errorf("offset %d, tail %q: %q survives in %q", pad, tail, secret, got)
					}
				}
			}
		}
	}
}
