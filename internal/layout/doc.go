// Package layout holds the test that keeps the project's packages in their
// layers: testdata/imports.txt says, for every package, which of the
// project's packages it may import, and why the layers are what they are.
// A new import across layers fails the test until that file says it is
// meant; a new package fails it until the file gives it a line.
package layout
