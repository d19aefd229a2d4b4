package sdr

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"strconv"
	"strings"
	"testing"

	"github.com/sdrnet/sdrnet/internal/datapath/udp"
)

// TestPublicAPI keeps the package's surface public: no exported function,
// method, type, field, constant or variable mentions a type of an internal
// package (an outside program could not name it, and go doc hides its
// fields), and every exported declaration has a doc comment.
func TestPublicAPI(t *testing.T) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			f, err := parser.ParseFile(fset, n, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
	}
	for _, f := range files {
		internal := map[string]string{} // import name -> path, internal imports only
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.Contains(p, "/internal/") {
				continue
			}
			name := path.Base(p)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			internal[name] = p
		}
		check := func(where string, n ast.Node) {
			if n == nil {
				return
			}
			ast.Inspect(n, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && internal[id.Name] != "" {
						t.Errorf("%s: %s mentions %s.%s of %s", fset.Position(sel.Pos()), where, id.Name, sel.Sel.Name, internal[id.Name])
					}
				}
				return true
			})
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv)) {
					continue
				}
				check(d.Name.Name, d.Type)
				// The methods of the standard interfaces need no words.
				std := d.Recv != nil && (d.Name.Name == "Error" || d.Name.Name == "Unwrap" || d.Name.Name == "Is" || d.Name.Name == "String")
				if d.Doc == nil && !std {
					t.Errorf("%s: %s has no doc comment", fset.Position(d.Pos()), d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						if d.Doc == nil && s.Doc == nil {
							t.Errorf("%s: type %s has no doc comment", fset.Position(s.Pos()), s.Name.Name)
						}
						checkType(s.Name.Name, s.Type, check)
					case *ast.ValueSpec:
						for _, name := range s.Names {
							if name.IsExported() {
								check(name.Name, s.Type)
								for _, v := range s.Values {
									check(name.Name, v)
								}
							}
						}
					}
				}
			}
		}
	}
}

// checkType checks what a type declaration makes public: the exported
// fields of a struct (embedded ones included), the methods of an
// interface, anything else whole.
func checkType(name string, typ ast.Expr, check func(string, ast.Node)) {
	st, ok := typ.(*ast.StructType)
	if !ok {
		check(name, typ)
		return
	}
	for _, fld := range st.Fields.List {
		if len(fld.Names) == 0 { // embedded: public if its type's name is
			if id := typeName(fld.Type); id != nil && id.IsExported() {
				check(name+" (embedded)", fld.Type)
			}
			continue
		}
		for _, n := range fld.Names {
			if n.IsExported() {
				check(name+"."+n.Name, fld.Type)
			}
		}
	}
}

// TestDefaultWindowFitsSocket: the default windows are at most the
// datapath's socket buffer: the unpaced one at most half of it, BBR's
// all of it.
func TestDefaultWindowFitsSocket(t *testing.T) {
	if DefaultWindow > udp.DefaultSocketBuffer/2 {
		t.Errorf("DefaultWindow %d, want at most half of udp.DefaultSocketBuffer %d", DefaultWindow, udp.DefaultSocketBuffer)
	}
	if DefaultPacedWindow != udp.DefaultSocketBuffer {
		t.Errorf("DefaultPacedWindow %d, want udp.DefaultSocketBuffer %d", DefaultPacedWindow, udp.DefaultSocketBuffer)
	}
}

func typeName(e ast.Expr) *ast.Ident {
	switch e := e.(type) {
	case *ast.Ident:
		return e
	case *ast.StarExpr:
		return typeName(e.X)
	case *ast.SelectorExpr:
		return e.Sel
	}
	return nil
}

func exportedRecv(r *ast.FieldList) bool {
	id := typeName(r.List[0].Type)
	if ix, ok := r.List[0].Type.(*ast.IndexExpr); ok {
		id = typeName(ix.X)
	}
	return id != nil && id.IsExported()
}
