/// A first-in, first-out queue that releases each element as soon as it is taken.
///
/// The one queue type of the library: the dispatcher's pending changes, the per-thread trampoline
/// and the sinks' buffers all use it. Elements live in an array read from `head`; taking one clears
/// its slot (so a large value is freed at once, not when the queue next compacts), and the array is
/// compacted when the taken prefix is at least half of it, which keeps `append` and `popFirst`
/// amortised O(1) and the memory at most twice what is queued.
///
/// Not thread-safe: its owner guards it (a container's lock, a pipeline's lock, or one thread).
@usableFromInline
struct FIFOQueue<Element> {
    @usableFromInline
    var slots: [Element?] = []
    @usableFromInline
    var head = 0

    @inlinable
    init() {}

    /// How many elements are queued.
    @inlinable
    @inline(__always)
    var count: Int { slots.count - head }

    @inlinable
    var isEmpty: Bool { head == slots.count }

    /// The oldest element, without taking it.
    @inlinable
    var first: Element? { head < slots.count ? slots[head] : nil }

    /// The newest element, without taking it.
    var last: Element? { head < slots.count ? slots[slots.count - 1] : nil }

    /// Appends `element`, taking it over: a caller that gives its copy away retains and releases
    /// nothing (`__owned`: `consuming` made unspecialised callers copy it through its witness).
    @inlinable
    @inline(__always)
    mutating func append(_ element: __owned Element) {
        slots.append(element)
    }

    /// Takes the oldest element.
    @inlinable
    mutating func popFirst() -> Element? {
        guard head < slots.count else { return nil }
        var element: Element?
        swap(&element, &slots[head])
        head += 1
        compactIfWorthIt()
        return element
    }

    /// Whether there is an oldest element and it satisfies `predicate`, which sees it in place
    /// (a large element is not copied to be looked at).
    @inlinable
    func firstSatisfies(_ predicate: (borrowing Element) -> Bool) -> Bool {
        guard head < slots.count else { return false }
        return slots.withUnsafeBufferPointer { predicate($0[head].unsafelyUnwrapped) }
    }

    /// How many of the oldest `prefix` elements there are up to and including the newest of them
    /// that satisfies `predicate`, or 0 if none does.
    ///
    /// - Complexity: O(`prefix`).
    func countThroughLast(ofFirst prefix: Int, where predicate: (borrowing Element) -> Bool) -> Int {
        slots.withUnsafeBufferPointer { slots in
            var index = head + min(prefix, count)
            while index > head {
                index -= 1
                if predicate(slots[index].unsafelyUnwrapped) { return index - head + 1 }
            }
            return 0
        }
    }

    /// Takes up to `maximumCount` of the oldest elements, oldest first.
    ///
    /// - Complexity: O(`maximumCount`), amortised.
    mutating func popFirst(upTo maximumCount: Int) -> [Element] {
        let end = min(slots.count, head + max(0, maximumCount))
        var taken: [Element] = []
        taken.reserveCapacity(end - head)
        while head < end {
            if let element = slots[head] { taken.append(element) }
            slots[head] = nil
            head += 1
        }
        compactIfWorthIt()
        return taken
    }

    /// The element `offset` places after the oldest (0 is the oldest); `offset` must be below ``count``.
    subscript(offset offset: Int) -> Element {
        slots[head + offset]!
    }

    /// Replaces every element with `element`: a buffer that keeps only the latest. When one element
    /// is queued, as it is in a buffer of one, it is replaced in place, and the array keeps its
    /// storage.
    @inlinable
    @inline(__always)
    mutating func replaceAll(with element: __owned Element) {
        if count == 1 {
            slots[head] = element
        } else {
            removeAll()
            slots.append(element)
        }
    }

    /// Removes every element.
    @usableFromInline
    mutating func removeAll() {
        slots.removeAll(keepingCapacity: slots.count <= 64)
        head = 0
    }

    /// The queued elements, oldest first.
    var elements: [Element] {
        slots[head...].compactMap { $0 }
    }

    @inlinable
    mutating func compactIfWorthIt() {
        if head == slots.count {
            if slots.count <= 64 {
                // Emptied slot by slot: `removeAll(keepingCapacity:)` replaces a range, ~180
                // instructions for the one slot a thread's trampoline usually holds.
                while !slots.isEmpty { slots.removeLast() }
            } else {
                slots = []
            }
            head = 0
        } else if head >= 64 && head * 2 >= slots.count {
            slots.removeFirst(head)
            head = 0
        }
    }
}
