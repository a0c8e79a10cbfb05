/// Identity projections: a projection of one element of a collection, found by its `id`.
///
/// A key path with an index, such as `\.items[0]`, traps as `Array`'s subscript does when the
/// index no longer exists, on whichever thread writes: deleting a row kills the app inside the
/// delete call. `[id:]` follows the element wherever it moves instead, and is `nil` while the
/// collection has no element with that `id`.
///
/// ```swift
/// let row = cart.items[id: book.id]     // MutableObserved<Item?>
/// let subscription = row.subscribe { print($0?.title ?? "removed") }
/// row.modify { $0?.quantity += 1 }       // changes the element in place, wherever it is
/// row ~> nil                            // removes it from the cart
/// ```
///
/// - Complexity: Reading the projection, and each change of the container it observes, looks
///   for the element linearly: O(*n*) for *n* elements.
extension Observed
where Value: RangeReplaceableCollection & MutableCollection, Value.Element: Identifiable & Equatable {
    /// A projection of the element whose `id` is `id`: `nil` while there is none.
    ///
    /// Disfavoured so that `model.items[id: x]` picks the writable projection when the path is
    /// writable.
    @_disfavoredOverload
    public subscript(id id: Value.Element.ID) -> Observed<Value.Element?> {
        observe(\.[stateKitElementWithID: id])
    }
}

extension MutableObserved
where Value: RangeReplaceableCollection & MutableCollection, Value.Element: Identifiable & Equatable {
    /// A writable projection of the element whose `id` is `id`: `nil` while there is none.
    ///
    /// Writing an element replaces the one with that `id` in place (or appends it if there is
    /// none); writing `nil` removes it.
    public subscript(id id: Value.Element.ID) -> MutableObserved<Value.Element?> {
        observe(\.[stateKitElementWithID: id])
    }
}

extension MonitoredState
where Value: RangeReplaceableCollection & MutableCollection, Value.Element: Identifiable & Equatable {
    /// A writable projection of the element whose `id` is `id`: `nil` while there is none.
    ///
    /// Writing an element replaces the one with that `id` in place (or appends it if there is
    /// none); writing `nil` removes it.
    public subscript(id id: Value.Element.ID) -> MutableObserved<Value.Element?> {
        observe(\.[stateKitElementWithID: id])
    }
}

extension RangeReplaceableCollection where Self: MutableCollection, Element: Identifiable {
    /// The element with `id`; setting replaces it in place (or appends), setting `nil` removes it.
    subscript(stateKitElementWithID id: Element.ID) -> Element? {
        get { first { $0.id == id } }
        set {
            if let index = firstIndex(where: { $0.id == id }) {
                if let newValue {
                    self[index] = newValue
                } else {
                    remove(at: index)
                }
            } else if let newValue {
                append(newValue)
            }
        }
    }
}
