package revkv

import (
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// packageDoc is the package documentation, as go doc shows it.
func packageDoc(t *testing.T) string {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	require.NoError(t, err)
	return f.Doc.Text()
}

// TestDocIsForUsers: the package doc says what the store promises and how
// to use it; it names no unexported function, file or lock of the
// implementation, whose place is the README's "Reading the source" and
// the comments where they live (issue 35, item 16).
func TestDocIsForUsers(t *testing.T) {
	doc := packageDoc(t)
	for _, internal := range []string{"commitLocked", "publishLocked", "commit.go", "lock order", "indexMu", "keyLog", "index's read lock"} {
		require.False(t, strings.Contains(doc, internal), "the package doc names %q", internal)
	}
	require.True(t, strings.HasPrefix(doc, "Package revkv is an embeddable multi-version key-value store"))
}

// TestDocWritesTheExportFormat: every field of an export's header and
// lines is written down in the package doc's "Export format" section, so
// that an export can be read, and its chain recomputed, from the docs
// alone (issue 35, item 5).
func TestDocWritesTheExportFormat(t *testing.T) {
	doc := packageDoc(t)
	i := strings.Index(doc, "# Export format")
	require.GreaterOrEqual(t, i, 0)
	section := doc[i:]
	section = section[:strings.Index(section[1:], "\n# ")+1]
	for _, v := range []any{exportHeader{}, exportLine{}} {
		ty := reflect.TypeOf(v)
		for i := range ty.NumField() {
			name, _, _ := strings.Cut(ty.Field(i).Tag.Get("json"), ",")
			require.True(t, regexp.MustCompile(`\b`+regexp.QuoteMeta(name)+`\b`).MatchString(section), "the field %q of %s", name, ty.Name())
		}
	}
	for _, must := range []string{"D(0)", "SHA-256", "prev", "@", "RFC 3339", "package chain"} {
		require.True(t, strings.Contains(section, must), "the section says %q", must)
	}
}
