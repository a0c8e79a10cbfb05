// Hidden setup for the examples of Recipes.md (see Scripts/check-doc-examples.sh).
func search(_ text: String) async {}
