import Observation

/// The bridge from a StateKit container or projection to Swift's Observation: one registrar and
/// one observed property.
///
/// The registrar's subject is this small non-generic object rather than the generic container, so
/// no generic metadata is looked up per call, and the key path is kept in a stored property
/// (measured: re-creating `\.value` on each call made `access()` 3-4x slower). Which container
/// changed is told by the registrar, not by the key path.
///
/// A container's writes call ``willSet()`` and ``didSet()`` around each write, outside its lock;
/// a ``WriteGate`` registered here rides on them.
@usableFromInline
final class ObservationPoint: Observable, Sendable {
    /// What every write of the container passes, when a layer registered one (see ``WriteGate``).
    ///
    /// This, ``keyPath`` and ``observableType`` come before ``registrar``, whose size is known
    /// only at run time (its type is resilient): so their offsets are constants, and the inlined
    /// ``didSet()`` and ``access()`` load no offset to reach them.
    @usableFromInline
    let writeGate = OnceInstalledReference<WriteGate>()
    @usableFromInline
    let keyPath: any KeyPath<ObservationPoint, Void> & Sendable = \ObservationPoint.value
    /// This class as an `Observable` type, so that a read finds the conformance's witness table
    /// with a load: the registrar's generic `access` needs it, and named statically it is looked
    /// up through a lazy accessor on every read (`Observable` is a resilient protocol).
    @usableFromInline
    let observableType: any (Observable & AnyObject & Sendable).Type = ObservationPoint.self
    @usableFromInline
    let registrar = ObservationRegistrar()

    @usableFromInline
    init() {}

    /// The observed property; only its key path matters.
    var value: Void { () }

    /// Registers a read with the `withObservationTracking` scope (or SwiftUI view) running on
    /// this thread, if any.
    ///
    /// Inlinable, so that a read calls the registrar directly: otherwise the optimiser merged this
    /// with ``willSet()`` and ``didSet()`` into one function that picks its call at run time.
    @inlinable
    func access() {
        access(as: observableType)
    }

    /// ``access()`` with `Subject`, which is this class, opened from ``observableType``: the
    /// registrar's generic `access` takes the witness table from there, and no reference count
    /// changes (the point and its key path outlive the call). 78 to 69 instructions a read.
    @inlinable
    @inline(__always)
    func access<Subject: Observable & AnyObject & Sendable>(as _: Subject.Type) {
        assert(Subject.self == ObservationPoint.self, "StateKit: an observation point's subject is itself")
        let subject = Unmanaged<Subject>.fromOpaque(Unmanaged.passUnretained(self).toOpaque())
        let path = Unmanaged<KeyPath<Subject, Void>>.fromOpaque(Unmanaged.passUnretained(keyPath).toOpaque())
        subject._withUnsafeGuaranteedRef { subject in
            path._withUnsafeGuaranteedRef { registrar.access(subject, keyPath: $0) }
        }
    }

    /// Tells Observation a change is about to land: `withObservationTracking`'s `onChange` runs
    /// here, on the calling thread. Never call it while holding a container's lock.
    ///
    /// Out of line: the gate is entered after Observation's call, so inlined, the point stayed in a
    /// register across that call, and the write path lost the register it keeps the container in
    /// (measured: a write with no observer cost 37 instructions, not 34).
    @usableFromInline
    @inline(never)
    func willSet() {
        registrar.willSet(self, keyPath: keyPath)
        writeGate.unretained?._withUnsafeGuaranteedRef { $0.willWrite() }
    }

    /// Tells Observation a change has landed, after the write gate, if any, lets go.
    ///
    /// Small enough to be inlined into the write path, with the gate's part out of line: a write
    /// without a gate adds one check to Observation's call.
    @usableFromInline
    func didSet() {
        if writeGate.isInstalled { writeGateDidWrite() }
        registrar.didSet(self, keyPath: keyPath)
    }

    /// Unlocks `lock`, a container's lock the caller holds, then calls ``didSet()``: the end of a
    /// write that changes nothing once ``willSet()`` ran (an `onChange` handler, another thread or
    /// the write gate made the change first).
    ///
    /// Out of line, so that the write path inlines ``didSet()`` once: with a copy on each of its
    /// exits, it outgrew what the optimiser inlines with its closures (measured: a write after a
    /// read cost 593 instructions, not 477, and a write with no observer 137, not 34).
    @usableFromInline
    @inline(never)
    func unlockAndDidSet(_ lock: Lock) {
        lock.unlock()
        didSet()
    }

    /// ``WriteGate/didWrite()`` of the installed gate.
    @usableFromInline
    @inline(never)
    func writeGateDidWrite() {
        writeGate.unretained?._withUnsafeGuaranteedRef { $0.didWrite() }
    }
}
