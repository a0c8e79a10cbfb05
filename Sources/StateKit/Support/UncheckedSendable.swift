/// Carries a value across a concurrency boundary that StateKit has made safe by other means
/// (a lock, or a public API that requires `Sendable` before handing the value to another queue).
@usableFromInline
struct UncheckedSendable<Value>: @unchecked Sendable {
    @usableFromInline
    var value: Value

    @inlinable
    init(_ value: Value) {
        self.value = value
    }
}
