// Hidden setup for the examples of Transactions.md (see Scripts/check-doc-examples.sh).
struct OutOfStock: Error {}
let checking = State(100, key: "checking")
let savings = State(0, key: "savings")
