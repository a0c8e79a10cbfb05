import Dispatch
import Foundation

/// The one live value of a key in a storage, shared by every persisted container that holds it
/// in this process (a ``PersistedState``, a ``UserDefaultsState``, `@Persisted`, a persisted
/// ``SyncedState``).
///
/// Every value the key takes gets a new `sequence`, in one order for the whole process:
/// - a container's own change is recorded here (under that container's lock, so one container's
///   changes keep their order), saved, and handed to every other container as an incoming change;
/// - a change made outside (another process, a replaced file, other code writing `UserDefaults`)
///   is noticed by the storage's watcher, read, and handed to every container; it is not saved
///   again. What the storage holds is recognised by its fingerprint, so the container's own
///   writes never come back as changes.
///
/// A container applies an incoming value only if its sequence is newer than the last it applied
/// or recorded, so every container ends on the value with the highest sequence, whatever order
/// the deliveries race in. Saves and reads of the storage are serialised by `ioLock`; nothing
/// calls a container while holding a lock of this object.
final class StoredValue<Value>: RetirableStoredValue, @unchecked Sendable {
    let key: String
    let codec: StoredValueCodec<Value>
    /// The value when storage holds none (the first container's default).
    let defaultValue: Value
    /// The observable load and save errors every container of this value reports.
    let status = PersistenceStatus()

    private let savesInline: Bool
    private let queue: DispatchQueue
    private let ioLock = Lock()
    private let lock = Lock()
    // Guarded by `lock`.
    private var members: [WeakStoredValueMember<Value>] = []
    private var value: Value
    private var sequence: UInt64 = 0
    private var savedSequence: UInt64 = 0
    private var isSaveScheduled = false
    private var isCheckScheduled = false
    private var failedSaves = 0
    private var persisting = true
    // Guarded by `ioLock`.
    private var isLoaded = false
    private var knownFingerprint: Data?
    private var watchToken: AnyObject?

    /// Creates the shared value; ``prepare()`` loads it.
    ///
    /// - Parameter savesInline: Save on the writer's thread before the write returns (for
    ///   `UserDefaults`, which only writes memory), rather than on a queue of its own.
    init(key: String, codec: StoredValueCodec<Value>, defaultValue: Value, savesInline: Bool) {
        self.key = key
        self.codec = codec
        self.defaultValue = defaultValue
        self.value = defaultValue
        self.savesInline = savesInline
        self.queue = DispatchQueue(label: "StateKit.persistence.\(key)", qos: .utility)
    }

    /// Whether changes are saved: `false` when the stored data could be neither read nor moved
    /// aside, so that saving would overwrite it.
    var isPersisting: Bool {
        lock.withLock { persisting }
    }

    /// Loads the stored value (once) and starts watching the storage.
    func prepare() {
        let outcome: Outcome? = ioLock.withLock {
            guard !isLoaded else { return nil }
            isLoaded = true
            let (loaded, outcome) = loadInitialValue()
            lock.withLock { value = loaded }
            watchToken = codec.watch { [weak self] in self?.storageMayHaveChanged() }
            return outcome
        }
        outcome?.apply(to: status)
    }

    /// The current value and its sequence, for a container about to join.
    func snapshot() -> (value: Value, sequence: UInt64) {
        lock.withLock { (value, sequence) }
    }

    /// Adds a container; returns the value it missed since its ``snapshot()``, if any.
    func add(_ member: any StoredValueMember<Value>, seen: UInt64) -> (value: Value, sequence: UInt64)? {
        lock.withLock {
            members.removeAll { $0.member == nil }
            members.append(WeakStoredValueMember(member: member))
            return sequence > seen ? (value, sequence) : nil
        }
    }

    /// Records a container's own change as the newest value; returns its sequence. The caller
    /// holds its container's lock, then calls ``share(_:sequence:from:)`` without it.
    func record(_ newValue: Value) -> UInt64 {
        lock.withLock {
            sequence &+= 1
            value = newValue
            return sequence
        }
    }

    /// Saves a recorded change and hands it to every other container.
    func share(_ newValue: Value, sequence: UInt64, from source: AnyObject) {
        scheduleSave()
        distribute(newValue, sequence: sequence, except: source)
    }

    /// Saves the newest value now if it is not saved yet, retrying a failed save, and returns
    /// once it is in storage or the attempts are used up (the error is then in ``status``).
    func flush() {
        var delay = 0.01
        for _ in 0..<4 {
            if saveNewest() { return }
            Thread.sleep(forTimeInterval: delay)
            delay *= 4
        }
    }

    // MARK: Saving

    func retire() -> Bool {
        guard lock.withLock({ members.allSatisfy { $0.member == nil } }) else { return false }
        flush()
        lock.withLock {
            persisting = false
            members = []
        }
        ioLock.withLock { watchToken = nil }
        return true
    }

    private func scheduleSave(after delay: Double = 0) {
        if savesInline && delay == 0 {
            saveNewest()
            return
        }
        let isNew = lock.withLock {
            guard persisting, !isSaveScheduled else { return false }
            isSaveScheduled = true
            return true
        }
        guard isNew else { return }
        queue.asyncAfter(deadline: .now() + delay) {
            self.lock.withLock { self.isSaveScheduled = false }
            if !self.saveNewest() { self.scheduleRetry() }
        }
    }

    /// After a failed background save, tries again later (0.1 s, doubling, at most 30 s), while
    /// the newest value is not saved.
    private func scheduleRetry() {
        let delay = lock.withLock {
            failedSaves += 1
            return min(30, 0.1 * pow(2, Double(min(failedSaves - 1, 9))))
        }
        scheduleSave(after: delay)
    }

    /// Writes the newest value unless it is already saved. Returns whether storage holds it.
    @discardableResult
    private func saveNewest() -> Bool {
        let outcome: Outcome = ioLock.withLock {
            guard
                let (newest, newestSequence) = lock.withLock({ () -> (Value, UInt64)? in
                    guard persisting, sequence > savedSequence else { return nil }
                    return (value, sequence)
                })
            else { return Outcome() }
            let representation: StoredRepresentation?
            do {
                representation = try codec.encode(newest)
            } catch {
                lock.withLock { savedSequence = max(savedSequence, newestSequence) }
                return Outcome(
                    saveError: .some(error),
                    diagnostic: StateDiagnostic(
                        kind: .encodingFailed, keys: [key],
                        message: "could not encode \(Value.self) for \(codec.location): \(error)", error: error))
            }
            knownFingerprint = representation?.fingerprint
            do {
                try codec.store(representation)
            } catch {
                return Outcome(
                    saveError: .some(error),
                    diagnostic: StoredValueRecovery.failure("saving", key: key, in: codec.location, error: error))
            }
            lock.withLock {
                savedSequence = max(savedSequence, newestSequence)
                failedSaves = 0
            }
            return Outcome(saveError: .some(nil))
        }
        outcome.apply(to: status)
        return outcome.saveError.map { $0 == nil } ?? true
    }

    // MARK: Loading

    /// The stored value, or the default when there is none, or none that can be used (reported,
    /// and the data moved aside: if it cannot be, nothing is saved, so it is not overwritten).
    private func loadInitialValue() -> (Value, Outcome?) {
        let representation: StoredRepresentation
        do {
            guard let stored = try codec.load() else { return (defaultValue, nil) }
            representation = stored
        } catch {
            return (defaultValue, setAsideAtLoad(error: error, reading: true))
        }
        do {
            let loaded = try codec.decode(representation)
            knownFingerprint = representation.fingerprint
            return (loaded, nil)
        } catch {
            return (defaultValue, setAsideAtLoad(error: error, reading: false))
        }
    }

    private func setAsideAtLoad(error: any Error, reading: Bool) -> Outcome {
        let kind: StateDiagnostic.Kind = reading ? .storageFailed : .decodingFailed
        let problem =
            reading
            ? "the value stored in \(codec.location) could not be read: \(error)"
            : "the value stored in \(codec.location) does not decode as \(Value.self): "
                + StoredValueRecovery.describe(error)
        do {
            let asideKey = try codec.moveAside()
            return Outcome(
                loadError: .some(error),
                diagnostic: StateDiagnostic(
                    kind: kind, keys: [key],
                    message: "\(problem); started from the default value and kept the stored value as '\(asideKey)'",
                    error: error))
        } catch let moveError {
            lock.withLock { persisting = false }
            return Outcome(
                loadError: .some(error),
                saveError: .some(SavingStopped(key: key, location: codec.location, reason: moveError)),
                diagnostic: StateDiagnostic(
                    kind: kind, keys: [key],
                    message: "\(problem); started from the default value, and will not save, because moving the "
                        + "stored value aside failed: \(moveError)",
                    error: error))
        }
    }

    // MARK: Outside changes

    /// Called by the storage's watcher: reads the key soon, coalescing a burst of events.
    func storageMayHaveChanged() {
        let isNew = lock.withLock {
            guard !isCheckScheduled else { return false }
            isCheckScheduled = true
            return true
        }
        guard isNew else { return }
        queue.asyncAfter(deadline: .now() + 0.01) {
            self.lock.withLock { self.isCheckScheduled = false }
            self.checkStorage(isSettled: false)
        }
    }

    /// Reads the key and, if it holds something this process did not write or read last, makes
    /// it the value of every container. Bytes that do not decode are given a moment (a writer
    /// may be halfway through), then kept aside and reported; the value stays as it was.
    private func checkStorage(isSettled: Bool) {
        var outcome = Outcome()
        let change: (Value, UInt64)? = ioLock.withLock {
            guard isLoaded else { return nil }
            let representation: StoredRepresentation?
            do {
                representation = try codec.load()
            } catch {
                return nil
            }
            guard representation?.fingerprint != knownFingerprint else { return nil }
            let newValue: Value
            if let representation {
                do {
                    newValue = try codec.decode(representation)
                } catch {
                    if isSettled {
                        knownFingerprint = representation.fingerprint
                        outcome = keepOutsideBadData(representation, error: error)
                    } else {
                        queue.asyncAfter(deadline: .now() + 0.15) { self.checkStorage(isSettled: true) }
                    }
                    return nil
                }
            } else {
                newValue = defaultValue
            }
            knownFingerprint = representation?.fingerprint
            outcome.loadError = .some(nil)
            return lock.withLock {
                sequence &+= 1
                value = newValue
                savedSequence = sequence
                return (newValue, sequence)
            }
        }
        outcome.apply(to: status)
        guard let (newValue, newSequence) = change else { return }
        distribute(newValue, sequence: newSequence, except: nil)
    }

    private func keepOutsideBadData(_ representation: StoredRepresentation, error: any Error) -> Outcome {
        let problem =
            "the value written to \(codec.location) outside this container does not decode as \(Value.self): "
            + StoredValueRecovery.describe(error)
        let kept: String
        do {
            kept = "kept a copy as '\(try codec.copyAside(representation))'"
        } catch let copyError {
            kept = "could not keep a copy aside: \(copyError)"
        }
        return Outcome(
            loadError: .some(error),
            diagnostic: StateDiagnostic(
                kind: .decodingFailed, keys: [key],
                message: "\(problem); the value stays as it was, and \(kept)", error: error))
    }

    // MARK: Distribution

    private func distribute(_ newValue: Value, sequence: UInt64, except source: AnyObject?) {
        let targets = lock.withLock {
            members.compactMap(\.member).filter { $0 !== source }
        }
        for target in targets {
            target.receiveStoredValue(newValue, sequence: sequence)
        }
    }
}

/// What a load, save or check found, applied (errors published, diagnostic reported) after the
/// locks are released: both run user code (Observation's `onChange`, the diagnostics handler).
private struct Outcome {
    /// `.some(nil)` clears the error; `nil` leaves it.
    var loadError: (any Error)??
    var saveError: (any Error)??
    var diagnostic: StateDiagnostic?

    init(loadError: (any Error)?? = nil, saveError: (any Error)?? = nil, diagnostic: StateDiagnostic? = nil) {
        self.loadError = loadError
        self.saveError = saveError
        self.diagnostic = diagnostic
    }

    func apply(to status: PersistenceStatus) {
        if let loadError { status.loadError = loadError }
        if let saveError { status.saveError = saveError }
        if let diagnostic { StateDiagnostics.report(diagnostic) }
    }
}

/// A container that holds a ``StoredValue``: it applies the values other containers and outside
/// writers give the key.
protocol StoredValueMember<Value>: AnyObject {
    associatedtype Value
    /// Applies `value` as an incoming change, unless the container already has a newer one.
    func receiveStoredValue(_ value: Value, sequence: UInt64)
}

struct WeakStoredValueMember<Value> {
    weak var member: (any StoredValueMember<Value>)?
}

/// The error a persisted container reports as its ``PersistedState/saveError`` when it does not
/// save at all: the stored data could be neither read nor moved aside, and saving would
/// overwrite it.
public struct SavingStopped: Error, Sendable, CustomStringConvertible {
    /// The key that is not saved.
    public let key: String
    /// The storage's location.
    public let location: String
    /// Why the stored data could not be moved aside.
    public let reason: any Error

    /// `"not saving 'theme' in file:///…/: …"`.
    public var description: String {
        "not saving '\(key)' in \(location): the stored value could be neither read nor moved aside (\(reason)), "
            + "so changes stay in memory"
    }
}
