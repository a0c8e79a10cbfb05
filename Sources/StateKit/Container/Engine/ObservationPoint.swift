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
    @usableFromInline
    let registrar = ObservationRegistrar()
    @usableFromInline
    let keyPath: any KeyPath<ObservationPoint, Void> & Sendable = \ObservationPoint.value
    /// What every write of the container passes, when a layer registered one (see ``WriteGate``).
    let writeGate = OnceInstalledReference<WriteGate>()

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
        registrar.access(self, keyPath: keyPath)
    }

    /// Tells Observation a change is about to land: `withObservationTracking`'s `onChange` runs
    /// here, on the calling thread. Never call it while holding a container's lock.
    @usableFromInline
    func willSet() {
        registrar.willSet(self, keyPath: keyPath)
        writeGate.unretained?._withUnsafeGuaranteedRef { $0.willWrite() }
    }

    /// Tells Observation a change has landed.
    @usableFromInline
    func didSet() {
        writeGate.unretained?._withUnsafeGuaranteedRef { $0.didWrite() }
        registrar.didSet(self, keyPath: keyPath)
    }
}
