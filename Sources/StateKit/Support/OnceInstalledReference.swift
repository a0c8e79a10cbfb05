import Synchronization

/// A strong reference set at most once, lazily and without a lock.
///
/// Two threads may both build an instance; the first to install it wins and the other's is
/// released. Reading it is one acquiring load. Unlike the standard library's
/// `AtomicLazyReference`, it also hands out the instance unretained (``unretained``), which the
/// hot paths use so that two threads reading it never contend on its reference count.
@usableFromInline
struct OnceInstalledReference<Instance: AnyObject>: ~Copyable {
    @usableFromInline
    let slot = Atomic<UnsafeMutableRawPointer?>(nil)

    init() {}

    /// The installed instance, if any.
    @inlinable
    var current: Instance? {
        guard let raw = slot.load(ordering: .acquiring) else { return nil }
        return Unmanaged<Instance>.fromOpaque(raw).takeUnretainedValue()
    }

    /// The installed instance, if any, without retaining it: valid for as long as this reference
    /// lives, since an installed instance is never replaced. Hot paths use it to touch no
    /// reference count (two threads retaining one object contend on its count).
    @inlinable
    var unretained: Unmanaged<Instance>? {
        slot.load(ordering: .acquiring).map { Unmanaged<Instance>.fromOpaque($0) }
    }

    /// Whether an instance is installed.
    @inlinable
    var isInstalled: Bool {
        slot.load(ordering: .acquiring) != nil
    }

    /// Installs `instance` unless another is installed already; returns the installed one.
    @usableFromInline
    func install(_ instance: Instance) -> Instance {
        let raw = Unmanaged.passRetained(instance).toOpaque()
        let (exchanged, current) = slot.compareExchange(expected: nil, desired: raw, ordering: .acquiringAndReleasing)
        if exchanged { return instance }
        Unmanaged<Instance>.fromOpaque(raw).release()
        return Unmanaged<Instance>.fromOpaque(current!).takeUnretainedValue()
    }

    deinit {
        if let raw = slot.load(ordering: .acquiring) {
            Unmanaged<Instance>.fromOpaque(raw).release()
        }
    }
}

/// The pointer is only ever a retained `Instance`, published with release-acquire ordering.
extension OnceInstalledReference: @unchecked Sendable where Instance: Sendable {}
