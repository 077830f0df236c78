package main

import (
	"go/ast"
	"go/token"
	"regexp"
	"strconv"
	"strings"
)

func isTest(fn *ast.FuncDecl) bool {
	if fn.Recv != nil {
		return false
	}
	n := fn.Name.Name
	return strings.HasPrefix(n, "Test") && n != "TestMain" || strings.HasPrefix(n, "Example")
}

// rewriteImports points imports of the peer's package at the adapter.
func rewriteImports(f *ast.File, from, to string) {
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p == from {
			im.Path.Value = strconv.Quote(to)
			if im.Name == nil {
				// The adapter's package has the peer's name, as the last
				// element of the peer's path (without a major version).
				im.Name = ast.NewIdent(pkgName(from))
			}
		}
	}
}

// pkgName guesses a package's name from its import path, as goimports does.
func pkgName(path string) string {
	parts := strings.Split(path, "/")
	last := parts[len(parts)-1]
	if len(parts) > 1 && regexp.MustCompile(`^v[0-9]+$`).MatchString(last) {
		last = parts[len(parts)-2]
	}
	return strings.ReplaceAll(last, "-", "_")
}

// removeDecl takes the function name out of f, and reports whether f had
// it.
func removeDecl(f *ast.File, name string) bool {
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == name {
			removeDecls(f, d)
			return true
		}
	}
	return false
}

// removeDecls takes d out of f, with its comments.
func removeDecls(f *ast.File, d ast.Decl) {
	for i, x := range f.Decls {
		if x == d {
			f.Decls = append(f.Decls[:i], f.Decls[i+1:]...)
			break
		}
	}
	// Comments inside a removed declaration would be printed out of place;
	// its doc comment goes with it.
	var doc *ast.CommentGroup
	switch d := d.(type) {
	case *ast.FuncDecl:
		doc = d.Doc
	case *ast.GenDecl:
		doc = d.Doc
	}
	keep := f.Comments[:0]
	for _, c := range f.Comments {
		if (c.Pos() < d.Pos() || c.End() > d.End()) && c != doc {
			keep = append(keep, c)
		}
	}
	f.Comments = keep
}

// bubble makes the test name run inside a testing/synctest bubble, where
// time is fake and moves only when every goroutine of the bubble waits:
// its sleeps then take no real time, and its verdict does not depend on
// the machine's speed. It reports whether f has the test.
func bubble(f *ast.File, name string) bool {
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || fn.Name.Name != name || fn.Body == nil {
			continue
		}
		param := fn.Type.Params.List[0]
		t := "t"
		if len(param.Names) == 1 && param.Names[0].Name != "_" {
			t = param.Names[0].Name
		} else {
			param.Names = []*ast.Ident{ast.NewIdent(t)}
		}
		// The new nodes take positions inside the old body, so that the
		// printer leaves the file's comments where they were.
		open, end := fn.Body.Lbrace, fn.Body.Rbrace
		id := func(name string) *ast.Ident { return &ast.Ident{NamePos: open, Name: name} }
		inner := &ast.FuncLit{
			Type: &ast.FuncType{Func: open, Params: &ast.FieldList{Opening: open, Closing: open, List: []*ast.Field{{
				Names: []*ast.Ident{id(t)},
				Type:  &ast.StarExpr{Star: open, X: &ast.SelectorExpr{X: id("testing"), Sel: id("T")}},
			}}}},
			Body: fn.Body,
		}
		call := &ast.CallExpr{
			Fun:    &ast.SelectorExpr{X: id("synctest"), Sel: id("Test")},
			Lparen: open,
			Args:   []ast.Expr{id(t), inner},
			Rparen: end,
		}
		fn.Body = &ast.BlockStmt{Lbrace: open, List: []ast.Stmt{&ast.ExprStmt{X: call}}, Rbrace: end}
		addImport(f, "testing/synctest")
		return true
	}
	return false
}

// addImport adds path to f's imports if it is not there.
func addImport(f *ast.File, path string) {
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p == path {
			return
		}
	}
	spec := &ast.ImportSpec{Path: &ast.BasicLit{Kind: token.STRING, Value: strconv.Quote(path)}}
	for _, d := range f.Decls {
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.IMPORT {
			gd.Specs = append(gd.Specs, spec)
			if !gd.Lparen.IsValid() {
				gd.Lparen = gd.Pos()
			}
			f.Imports = append(f.Imports, spec)
			return
		}
	}
	f.Decls = append([]ast.Decl{&ast.GenDecl{Tok: token.IMPORT, Specs: []ast.Spec{spec}}}, f.Decls...)
	f.Imports = append(f.Imports, spec)
}

// removeImport takes out the import a compiler error at line says is not
// used, and reports whether it did.
func removeImport(fset *token.FileSet, f *ast.File, line int, msg string) bool {
	if !unusedImportRe.MatchString(msg) {
		return false
	}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.IMPORT {
			continue
		}
		for i, s := range gd.Specs {
			if fset.Position(s.Pos()).Line == line {
				gd.Specs = append(gd.Specs[:i], gd.Specs[i+1:]...)
				for j, im := range f.Imports {
					if im == s {
						f.Imports = append(f.Imports[:j], f.Imports[j+1:]...)
						break
					}
				}
				return true
			}
		}
	}
	return false
}

// declAt returns f's top-level declaration that holds line.
func declAt(fset *token.FileSet, f *ast.File, line int) ast.Decl {
	for _, d := range f.Decls {
		from, to := fset.Position(d.Pos()).Line, fset.Position(d.End()).Line
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Doc != nil {
			from = fset.Position(fn.Doc.Pos()).Line
		}
		if from <= line && line <= to {
			return d
		}
	}
	return nil
}

func declName(d ast.Decl) string {
	if n := declNames(d); len(n) > 0 {
		return n[0]
	}
	return "?"
}

// declNames returns the names d declares; a method is named Type.Method.
func declNames(d ast.Decl) []string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv != nil && len(d.Recv.List) == 1 {
			t := d.Recv.List[0].Type
			if s, ok := t.(*ast.StarExpr); ok {
				t = s.X
			}
			if id, ok := t.(*ast.Ident); ok {
				return []string{id.Name + "." + d.Name.Name}
			}
		}
		return []string{d.Name.Name}
	case *ast.GenDecl:
		var names []string
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				names = append(names, s.Name.Name)
			case *ast.ValueSpec:
				for _, n := range s.Names {
					names = append(names, n.Name)
				}
			}
		}
		return names
	}
	return nil
}

var unusedImportRe = regexp.MustCompile(`imported (as \w+ )?and not used`)

// replaceRedisAddr points the suite's Redis address, port 6379 on any host,
// at the server the runner started.
func replaceRedisAddr(f *ast.File, addr string) {
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil && strings.HasSuffix(s, ":6379") {
				lit.Value = strconv.Quote(addr)
			}
		}
		return true
	})
}
