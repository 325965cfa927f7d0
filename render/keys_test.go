package render

import (
	"context"
	"strings"
	"testing"
)

// TestKeyMaterialWithLineBreaks: an imported Secret made from a file
// (`kubectl create secret generic --from-file=secret=key.b64`) keeps the
// file's line breaks. Base64 ignores them, in Go and in BIND alike, so the
// material is good and named must get it as it is: escaped, as Go quotes a
// string, BIND reads "\n" as the letter n and refuses the key ("bad
// base64 encoding").
func TestKeyMaterialWithLineBreaks(t *testing.T) {
	bin := namedCheckconf(t)
	for name, material := range map[string]string{
		"trailing newline": secret32 + "\n",
		"CRLF":             secret32 + "\r\n",
		"wrapped":          secret64[:40] + "\n" + secret64[40:] + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			in := scenarioAuthoritative()
			k := in.Keys["partner"]
			k.Secret = material
			in.Keys["partner"] = k
			out, err := Render(in)
			if err != nil {
				t.Fatalf("Render refuses good material: %v", err)
			}
			if !strings.Contains(string(out.SecretData[FileKeys]), `secret "`+material+`";`) {
				t.Errorf("keys.conf does not carry the material as it is:\n%s", out.SecretData[FileKeys])
			}
			if err := Check(context.Background(), in, bin); err != nil {
				t.Errorf("named-checkconf refuses the keys: %v", err)
			}
		})
	}
}
