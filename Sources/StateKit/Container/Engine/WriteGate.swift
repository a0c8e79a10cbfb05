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
/// A transaction's commit holds the gates of all the containers it touched, entered in the order
/// of ``transactionOrder`` before it takes their locks (``enterForTransaction()``); while it holds
/// them, ``willWrite()`` on its thread passes, and the write observer keeps each change for
/// ``commitTogether(_:)``, which the commit calls once its changes are applied and before they are
/// delivered; ``leaveTransaction()`` then lets each gate go.
///
/// Lock order: the gate (gates in ``transactionOrder``), then the container's lock. Nothing
/// holding a container's lock waits for a gate.
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

    /// Where the gate comes among the gates one transaction enters: every thread and process
    /// enters them in this order.
    var transactionOrder: String { "" }

    /// Waits for the gate, then holds it for the calling thread's transaction commit, bringing in
    /// what was written elsewhere meanwhile. Called without any container's lock.
    func enterForTransaction() {}

    /// Makes the changes the commit kept on `gates` (this one among them, all held) last
    /// together. Called without any container's lock, before the changes are delivered.
    func commitTogether(_ gates: [WriteGate]) {}

    /// Lets go of a gate ``enterForTransaction()`` held, publishing what it brought in that no
    /// change of the commit replaced. Called without any container's lock, while the thread
    /// delivers (so what it publishes is delivered once every gate is let go).
    func leaveTransaction() {}
}
