/// A gate that every write of a container passes, one at a time, registered on the container's
/// ``ObservationPoint`` by a layer whose writes must also be ordered with writes made outside the
/// process (shared file storage).
///
/// A write of an observed container already leaves its lock to tell Observation before it lands
/// (`willSet`), takes the lock again, checks whether it still changes anything, writes, delivers,
/// and tells Observation after (`didSet`). A gate rides on those two calls, so the write path
/// itself has nothing more to check:
/// - ``willWrite()``, after Observation's `willSet`, without the container's lock: wait for the
///   gate, and bring in what was written elsewhere meanwhile (the layer sets the value, at a
///   version of its own, before the write's check runs, so the check sees it);
/// - the layer's write observer (``State/writeObserver``), which runs under the lock for every
///   change before it is delivered, finishes the write's work outside the process and lets the
///   next writer in, so no handler runs with the gate held and a handler may write again;
/// - ``didWrite()``, before Observation's `didSet`, after the delivery: lets go of a gate the
///   write still holds because it changed nothing, publishing what ``willWrite()`` brought in.
///
/// Lock order: the gate, then the container's lock. Nothing holding the container's lock waits
/// for the gate.
///
/// - Note: A gate is entered and left on one thread; subclasses say how they are thread-safe.
@usableFromInline
class WriteGate: @unchecked Sendable {
    /// Waits until this thread may write, and brings in what was written elsewhere. Called
    /// without the container's lock.
    func willWrite() {}

    /// Lets the next writer in, if this thread's write did not (it changed nothing). Called
    /// without the container's lock.
    func didWrite() {}
}
