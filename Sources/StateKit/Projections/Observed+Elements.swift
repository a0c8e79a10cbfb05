/// Element projections: `state.cells[i]`, a projection of one position of a collection.
///
/// All the element projections of one collection in a container share one evaluation per change:
/// the collection is read once, and each watched position compared with the collection's own
/// subscript, so a list whose rows each watch their element pays about one comparison a row, not
/// one key path application. A write through one of them (`state.cells[k] ~> v`) looks at that
/// position only (and at projections of other paths that overlap it).
///
/// ```swift
/// struct Board: Equatable, Sendable { var cells = [Int](repeating: 0, count: 9) }
/// let board = MonitoredState(Board(), key: "board")
/// let row = board.cells[3]              // MutableObserved<Int>
/// let subscription = row.subscribe { print("cell 3 is \($0)") }
/// row ~> 7                              // one change of `board`; only cell 3's projections look
/// ```
///
/// - Warning: As with a key path such as `\.cells[3]`, a position that no longer exists traps
///   when the collection is read; use ``Observed/subscript(id:)`` to follow an element by `id`.
extension Observed
where Value: RandomAccessCollection, Value.Element: Equatable, Value.Index: Hashable {
    /// A projection of the element at `position`.
    ///
    /// Disfavoured so that `state.cells[i]` picks the writable projection when the path is
    /// writable.
    ///
    /// - Complexity: Each change of the container compares the element in O(1), with no key path
    ///   applied.
    @inlinable
    @_disfavoredOverload
    public subscript(position: Value.Index) -> Observed<Value.Element> {
        Observed<Value.Element>(projection.element(at: position, scan: ElementScan<Value>()))
    }
}

extension MutableObserved
where Value: RandomAccessCollection & MutableCollection, Value.Element: Equatable, Value.Index: Hashable {
    /// A writable projection of the element at `position`: a write through it is one change of
    /// the container, and only the projections that can see that element look at it.
    ///
    /// - Complexity: Each change of the container compares the element in O(1), with no key path
    ///   applied; a write through it evaluates no other position of the collection.
    @inlinable
    public subscript(position: Value.Index) -> MutableObserved<Value.Element> {
        MutableObserved<Value.Element>(writable.writableElement(at: position, scan: ElementScan<Value>()))
    }
}
