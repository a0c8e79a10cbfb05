/// A projection a derived state can be computed from: every ``Projection`` is one. Declared here,
/// not as a requirement of ``Projection``, so that projections name nothing of derived states.
protocol DerivationSource {
    /// What a derived state computed from this projection watches.
    var derivationInputs: [DerivationInput] { get }
}

extension Projection {
    /// What a derived state computed from this projection watches.
    var watchedByDerivation: [DerivationInput] {
        guard let source = self as? any DerivationSource else {
            preconditionFailure("\(Self.self) is a Projection that is not a DerivationSource")
        }
        return source.derivationInputs
    }
}

/// What derived states computed from container projections watch: the container for a view of
/// the whole of it, the group of its key path for a part, so that writes elsewhere in the
/// container do not make the derived state compute again.
extension WholeProjection: DerivationSource {
    var derivationInputs: [DerivationInput] {
        [root.wholeDerivationInput]
    }

    func readUntracked() -> Root { root.untrackedValue }
}

extension State {
    /// The container as a whole, as a derived state computed from it watches it.
    @usableFromInline
    final var wholeDerivationInput: DerivationInput {
        DerivationInput(leaf: self, id: cellID) { changed in
            self.addSubscriber(queue: nil, handler: .value { _ in changed() }, sendsCurrentValue: false)
        }
    }
}

extension KeyPathProjection: DerivationSource {
    var derivationInputs: [DerivationInput] {
        let root = self.root
        let path = self.path
        return [
            DerivationInput(leaf: root, id: [root.cellID as AnyHashable, path]) { changed in
                root.addSubscriber(to: path, queue: nil, handler: .value { _ in changed() }, sendsCurrentValue: false)
            }
        ]
    }
}

extension WritableKeyPathProjection: DerivationSource {
    var derivationInputs: [DerivationInput] {
        KeyPathProjection(root: root, path: path).derivationInputs
    }
}

/// A derived state computed from an element projection watches the element's key path
/// (`\.cells[i]`), as one computed from `observe(\.cells[i])` does.
extension ElementProjection: DerivationSource {
    var derivationInputs: [DerivationInput] {
        whole.derivationInputs
    }
}

extension WritableElementProjection: DerivationSource {
    var derivationInputs: [DerivationInput] {
        readOnly.derivationInputs
    }
}
