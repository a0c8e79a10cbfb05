/// A container's subscriber list as the thread that holds its ``DeliveryClaim`` reads it: without
/// retaining it.
///
/// Retaining and releasing the list around a delivery were two of a one-subscriber write's five
/// atomic operations, and a third of its time. The claim makes them unnecessary: while it is
/// held, a change to the audience first retires the list it replaces
/// (``DeliveryStateMachine/retire(_:claim:)``), which keeps that list alive and, being a second
/// reference, makes the change copy it instead of changing it in place; and the claim's holder
/// releases retired lists only after it is done with them (``State/deliverNextQueued(in:isOverflow:)``).
@usableFromInline
struct UnretainedSubscribers<Value> {
    @usableFromInline
    let elements: UnsafeBufferPointer<Subscriber<Value>>

    /// No subscribers.
    @inlinable
    init() {
        elements = UnsafeBufferPointer(start: nil, count: 0)
    }

    /// The subscribers in `list`'s buffer, which must outlive this value unchanged: read with the
    /// claim held, or from a copy the caller keeps.
    @inlinable
    init(_ list: borrowing ContiguousArray<Subscriber<Value>>) {
        elements = list.withUnsafeBufferPointer { $0 }
    }

    @inlinable
    var count: Int {
        elements.count
    }

    /// The subscriber at `index`, to use with `_withUnsafeGuaranteedRef`, which does not retain it.
    @inlinable
    subscript(index: Int) -> Unmanaged<Subscriber<Value>> {
        Unmanaged.passUnretained(elements[index])
    }
}
