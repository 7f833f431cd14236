package revkv

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
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
// the comments where they live.
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
// alone.
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

// TestReadmeNamesTheAPI: the README's "API at a glance" names every
// exported function, every method of Store and Txn, and every sentinel
// error, and no longer calls the store in-memory only.
func TestReadmeNamesTheAPI(t *testing.T) {
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	readme := string(b)
	i := strings.Index(readme, "## API at a glance")
	require.GreaterOrEqual(t, i, 0)
	api := readme[i:]
	api = api[:strings.Index(api[1:], "\n## ")+1]
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	require.NoError(t, err)
	var names []string
	for _, f := range pkgs["revkv"].Files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv != nil {
					recv := d.Recv.List[0].Type
					if st, ok := recv.(*ast.StarExpr); ok {
						recv = st.X
					}
					if ix, ok := recv.(*ast.IndexExpr); ok {
						recv = ix.X
					}
					if id, ok := recv.(*ast.Ident); !ok || id.Name != "Store" && id.Name != "Txn" {
						continue
					}
				}
				names = append(names, d.Name.Name)
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					if vs, ok := sp.(*ast.ValueSpec); ok {
						for _, n := range vs.Names {
							if strings.HasPrefix(n.Name, "Err") {
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	require.Greater(t, len(names), 50)
	for _, n := range names {
		require.True(t, regexp.MustCompile("`"+n+`\b`).MatchString(api), "the README's API table leaves out %s", n)
	}
	require.False(t, strings.Contains(readme, "in-memory, multi-version"), "the README calls revkv in-memory")
	require.False(t, strings.Contains(readme, "when the data must outlive the\nprocess"), "the README sends durable data to BadgerDB")
}
