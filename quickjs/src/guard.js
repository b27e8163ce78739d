// The engine's guards around QuickJS built-ins whose C code runs long without asking the
// interrupt handler (see guard.rs for what each bounds and why). Evaluated once, in strict mode,
// before the program runs; it is a function of:
//
// - hooks.tick(): whether the program must stop now (its time is up, or the host interrupted it);
// - hooks.isConstructor(value);
// - limits: { walk, sort, search, pattern, keys, charge } (numbers; guard.rs documents them).
//
// Everything the wrappers use is taken here, before the program runs, so a program that replaces
// a global, a prototype's method or `Object.prototype`'s properties changes only its own world:
// the wrappers never iterate with `for...of`, spread or destructure (each of which reaches
// methods a program can replace), assign only to arrays without a prototype, and read only from
// objects without one. The originals stay in these closures, which the program cannot reach.
(function (hooks, limits) {
  "use strict";

  const tick = hooks.tick;
  const isConstructor = hooks.isConstructor;
  const WALK = limits.walk;
  const SORT = limits.sort;
  const SEARCH = limits.search;
  const PATTERN = limits.pattern;
  const KEYS = limits.keys;
  const CHARGE = limits.charge;

  const apply = Reflect.apply;
  const construct = Reflect.construct;
  const defineProperty = Reflect.defineProperty;
  const getOwnPropertyDescriptor = Reflect.getOwnPropertyDescriptor;
  const getPrototypeOf = Reflect.getPrototypeOf;
  const setPrototypeOf = Reflect.setPrototypeOf;
  const reflectGet = Reflect.get;
  const reflectSet = Reflect.set;
  const ownKeys = Reflect.ownKeys;
  const hasOwn = Object.hasOwn;
  const toObjectFunction = Object;
  const isArray = Array.isArray;
  const trunc = Math.trunc;
  const RangeErrorCtor = RangeError;
  const TypeErrorCtor = TypeError;
  const ProxyCtor = Proxy;
  const RegExpCtor = RegExp;
  const regexpSource = getOwnPropertyDescriptor(RegExp.prototype, "source").get;
  const stringSlice = String.prototype.slice;
  const symbolIsConcatSpreadable = Symbol.isConcatSpreadable;
  const symbolSpecies = Symbol.species;
  const symbolMatch = Symbol.match;
  const symbolMatchAll = Symbol.matchAll;
  const symbolSearch = Symbol.search;
  const symbolSplit = Symbol.split;
  const symbolReplace = Symbol.replace;
  const ArrayCtor = Array;
  const ArrayProto = Array.prototype;
  const TypedArrayProto = getPrototypeOf(Uint8Array.prototype);
  const typedArrayLength = getOwnPropertyDescriptor(TypedArrayProto, "length").get;
  const arrayConcat = ArrayProto.concat;
  const arrayFlat = ArrayProto.flat;
  const MAX_SAFE = 2 ** 53 - 1;

  // `uncurry(f)(self, a, b)` is `f.call(self, a, b)`, without looking anything up.
  const uncurry = (f) => apply(Function.prototype.bind, Function.prototype.call, [f]);

  // Every Proxy the program makes goes through the guarded `Proxy` below, which remembers it:
  // so an Array that is no Proxy is told apart in JavaScript, without asking the engine.
  const proxies = new WeakSet();
  const remember = uncurry(WeakSet.prototype.add);
  const knownProxy = uncurry(WeakSet.prototype.has);
  const isProxy = (value) => isObject(value) && knownProxy(proxies, value);

  function isRealArray(value) {
    return isArray(value) && !knownProxy(proxies, value);
  }

  // --- Conversions, as the specification's abstract operations do them ----------------------

  function isObject(value) {
    return (typeof value === "object" && value !== null) || typeof value === "function";
  }

  function toLength(value) {
    const number = +value;
    if (!(number > 0)) {
      return 0;
    }
    return number < MAX_SAFE ? trunc(number) : MAX_SAFE;
  }

  function toIntegerOrInfinity(value) {
    const number = +value;
    return number !== number ? 0 : trunc(number);
  }

  function toObject(value) {
    if (value === null || value === undefined) {
      throw new TypeErrorCtor("cannot convert to object");
    }
    return toObjectFunction(value);
  }

  // IsRegExp: a `Symbol.match` that says so, or a RegExp object.
  function isRegExp(value) {
    if (!isObject(value)) {
      return false;
    }
    const matcher = value[symbolMatch];
    if (matcher !== undefined) {
      return !!matcher;
    }
    try {
      apply(regexpSource, value, []);
      return true;
    } catch {
      return false;
    }
  }

  // CreateDataPropertyOrThrow on an array of the guards' own.
  function put(array, index, value) {
    defineProperty(array, index, {
      __proto__: null,
      value,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }

  // --- Time: QuickJS asks the interrupt handler only every 10,000 of its checks, and a built-in
  // call is one check however long it runs. A guarded call counts the work it lets through, and
  // past `CHARGE` units asks the engine itself; when the program must stop, a loop makes
  // QuickJS ask its handler at once, which stops it.

  let owed = 0;

  function settle() {
    owed = 0;
    if (tick()) {
      for (;;) {}
    }
  }

  // The hot wrappers write this out (`owed += units; if (owed >= CHARGE) settle();`).
  function charge(units) {
    owed += units;
    if (owed >= CHARGE) {
      settle();
    }
  }

  // --- Installing a wrapper in the original's place ------------------------------------------

  // Replaces `object[key]` with `make(original)`, with the original's `name`, `length` and
  // property attributes (built-in methods are not enumerable).
  function replace(object, key, make) {
    const descriptor = getOwnPropertyDescriptor(object, key);
    if (descriptor === undefined || typeof descriptor.value !== "function") {
      return;
    }
    const original = descriptor.value;
    const wrapper = make(original);
    defineProperty(wrapper, "name", { value: original.name, configurable: true });
    defineProperty(wrapper, "length", { value: original.length, configurable: true });
    descriptor.value = wrapper;
    defineProperty(object, key, descriptor);
  }

  function walkLimit(name, length) {
    return new RangeErrorCtor(
      `${name} would walk ${length} elements, more than the ${WALK} one call may walk in ` +
        `toolcat (QuickJS cannot stop it midway): keep arrays, and the length of array-likes, ` +
        `within ${WALK} elements (a sparse array's length counts, not its items), or work in parts`,
    );
  }

  // --- Array.prototype methods that walk `this` -----------------------------------------------

  // What an Array.prototype method is called on, so that it walks no more than the length read
  // here: an array or a string as it is (its length is its own, and no code runs before the
  // method reads it), anything else through a view that answers the length read once, whatever
  // a getter or a Proxy would answer the second time. It answers the target; the length and the
  // object it was read on are left in `walkedLength` and `walkedObject`, set after any code of
  // the program's it ran, for the caller to take at once.
  let walkedLength = 0;
  let walkedObject;

  function walked(self) {
    if (typeof self === "string" || isRealArray(self)) {
      walkedLength = self.length;
      walkedObject = self;
      return self;
    }
    const object = toObjectFunction(self);
    const raw = object.length;
    const length = toLength(raw);
    const answer = isObject(raw) ? length : raw;
    const target = new ProxyCtor(object, {
      __proto__: null,
      get(inner, key) {
        return key === "length" ? answer : reflectGet(inner, key, inner);
      },
      set(inner, key, value) {
        return reflectSet(inner, key, value, inner);
      },
    });
    walkedLength = length;
    walkedObject = object;
    return target;
  }

  // `fixed` methods treat an argument passed as `undefined` as one not passed, so they are
  // called with all three; the others get the arguments as they came.
  function guardWalk(key, fixed) {
    const name = `Array.prototype.${key}`;
    replace(ArrayProto, key, (original) => {
      const call = uncurry(original);
      return fixed
        ? {
            [key](a, b, c) {
              let target = this;
              let length;
              let object = target;
              if (typeof target === "string" || (isArray(target) && !knownProxy(proxies, target))) {
                length = target.length;
              } else if (target === null || target === undefined) {
                return call(target, a, b, c);
              } else {
                target = walked(target);
                length = walkedLength;
                object = walkedObject;
              }
              if (length > WALK) {
                throw walkLimit(name, length);
              }
              owed += length;
              if (owed >= CHARGE) {
                settle();
              }
              const result = call(target, a, b, c);
              return result === target ? object : result;
            },
          }[key]
        : {
            [key](...args) {
              if (this === null || this === undefined) {
                return apply(original, this, args);
              }
              const target = walked(this);
              const length = walkedLength;
              const object = walkedObject;
              if (length > WALK) {
                throw walkLimit(name, length);
              }
              charge(length);
              const result = apply(original, target, args);
              return result === target ? object : result;
            },
          }[key];
    });
  }

  for (const key of [
    "join",
    "toLocaleString",
    "reverse",
    "copyWithin",
    "fill",
    "slice",
    "sort",
    "shift",
  ]) {
    guardWalk(key, true);
  }
  for (const key of ["splice", "unshift"]) {
    guardWalk(key, false);
  }

  // --- concat, flat, flatMap: they walk more than one array, so each array is copied by a call
  // of its own, its length read (and checked) right before, and the copies joined at the end.

  // An array of the guards' own, with no prototype: assigning to it reaches no setter of the
  // program's, its species is plain Array (no `constructor`) and it spreads in `concat` (no
  // `Symbol.isConcatSpreadable`), whatever the program did to Array.prototype.
  function bare(array) {
    setPrototypeOf(array, null);
    return array;
  }

  // Arrays this short are copied in JavaScript rather than by a call of the original.
  const SHORT = 16;

  // ArraySpeciesCreate(original, 0), or null for a plain new Array.
  function speciesCreate(original) {
    if (!isArray(original)) {
      return null;
    }
    let C = original.constructor;
    if (isObject(C)) {
      C = C[symbolSpecies];
      if (C === null) {
        C = undefined;
      }
    }
    if (C === undefined || C === ArrayCtor) {
      return null;
    }
    if (!isConstructor(C)) {
      throw new TypeErrorCtor("the species of the array is not a constructor");
    }
    return construct(C, [0]);
  }

  // Whether looking `Symbol.isConcatSpreadable` up on `value` runs no code (no getter, no Proxy).
  function plainSpreadable(value) {
    for (let object = value; object !== null; object = getPrototypeOf(object)) {
      if (isProxy(object)) {
        return false;
      }
      const descriptor = getOwnPropertyDescriptor(object, symbolIsConcatSpreadable);
      if (descriptor !== undefined) {
        return hasOwn(descriptor, "value");
      }
    }
    return true;
  }

  function spreadable(value) {
    if (!isObject(value)) {
      return false;
    }
    const spread = value[symbolIsConcatSpreadable];
    return spread !== undefined ? !!spread : isArray(value);
  }

  function lengthOf(value) {
    return isRealArray(value) ? value.length : toLength(value.length);
  }

  // The pieces a result is made of, in order, and the loose values (and holes) not yet in one.
  function pieces() {
    return {
      __proto__: null,
      list: bare([]),
      count: 0,
      loose: null,
      looseCount: 0,
      last: null,
      walked: 0,
    };
  }

  function loose(parts) {
    if (parts.loose === null) {
      parts.loose = bare([]);
      parts.looseCount = 0;
    }
    return parts.loose;
  }

  function addLoose(parts, value) {
    loose(parts)[parts.looseCount++] = value;
  }

  function flush(parts) {
    if (parts.loose !== null) {
      parts.loose.length = parts.looseCount;
      parts.list[parts.count++] = parts.loose;
      parts.last = parts.loose;
      parts.loose = null;
    }
  }

  function addPiece(parts, piece) {
    flush(parts);
    parts.list[parts.count++] = bare(piece);
  }

  function walk(parts, name, length) {
    parts.walked += length;
    if (parts.walked > WALK) {
      throw walkLimit(name, parts.walked);
    }
    charge(length);
  }

  // The pieces joined, by the original `concat` (a few thousand at a time: a call takes at
  // most 65,535 arguments).
  function join(parts) {
    flush(parts);
    let list = parts.list;
    let count = parts.count;
    if (count === 0) {
      return [];
    }
    if (count === 1 && list[0] === parts.last) {
      // A single array of loose values, built here: it is the result, once it is an Array's.
      return setPrototypeOf(list[0], ArrayProto) && list[0];
    }
    while (count > 8192) {
      const next = bare([]);
      let joined = 0;
      for (let start = 0; start < count; start += 8192) {
        const part = bare([]);
        for (let i = start; i < start + 8192 && i < count; i++) {
          part[i - start] = list[i];
        }
        next[joined++] = bare(apply(arrayConcat, bare([]), part));
      }
      list = next;
      count = joined;
    }
    list.length = count;
    return apply(arrayConcat, bare([]), list);
  }

  // The result into the species' array, as the original would have filled it.
  function into(target, result) {
    if (target === null) {
      return result;
    }
    const length = result.length;
    for (let k = 0; k < length; k++) {
      if (
        k in result &&
        !defineProperty(target, k, {
          __proto__: null,
          value: result[k],
          writable: true,
          enumerable: true,
          configurable: true,
        })
      ) {
        throw new TypeErrorCtor(`cannot define property ${k} of the new array`);
      }
    }
    if (!reflectSet(target, "length", length, target)) {
      throw new TypeErrorCtor("cannot set the length of the new array");
    }
    return target;
  }

  replace(
    ArrayProto,
    "concat",
    (original) =>
      ({
        concat(...items) {
          if (this === null || this === undefined) {
            return apply(original, this, items);
          }
          const object = toObject(this);
          const target = speciesCreate(object);
          const parts = pieces();
          // The arrays that will surely be walked, counted before any is: their lengths are theirs.
          let sure = 0;
          for (let i = -1; i < items.length; i++) {
            const item = i < 0 ? object : items[i];
            if (
              isRealArray(item) &&
              item.length > SHORT &&
              plainSpreadable(item) &&
              spreadable(item)
            ) {
              sure += item.length;
              if (sure > WALK) {
                throw walkLimit("Array.prototype.concat", sure);
              }
            }
          }
          let total = 0;
          for (let i = -1; i < items.length; i++) {
            const item = i < 0 ? object : items[i];
            if (!spreadable(item)) {
              addLoose(parts, item);
              total += 1;
              continue;
            }
            const length = lengthOf(item);
            if (total + length > MAX_SAFE) {
              throw new TypeErrorCtor("the array would be too long");
            }
            walk(parts, "Array.prototype.concat", length);
            if (length > SHORT && isRealArray(item) && plainSpreadable(item)) {
              addPiece(parts, apply(original, bare([]), [item]));
            } else {
              const bucket = loose(parts);
              let at = parts.looseCount;
              for (let k = 0; k < length; k++, at++) {
                if (k in item) {
                  bucket[at] = item[k];
                }
              }
              parts.looseCount = at;
            }
            total += length;
          }
          return into(target, join(parts));
        },
      }).concat,
  );

  // FlattenIntoArray into `parts`: the arrays at the last level are copied by the original
  // `flat`, one call each on an array of the guards' own holding it.
  function flatten(parts, name, source, length, depth, mapper, thisArg) {
    walk(parts, name, length);
    const map = mapper === undefined ? undefined : uncurry(mapper);
    for (let k = 0; k < length; k++) {
      if (!(k in source)) {
        continue;
      }
      let element = source[k];
      if (map !== undefined) {
        element = map(thisArg, element, k, source);
      }
      if (depth > 0 && isArray(element)) {
        const elementLength = lengthOf(element);
        if (depth > 1) {
          flatten(parts, name, element, elementLength, depth - 1, undefined, undefined);
        } else if (elementLength > SHORT && isRealArray(element)) {
          walk(parts, name, elementLength);
          addPiece(parts, apply(arrayFlat, bare([element]), [1]));
        } else {
          walk(parts, name, elementLength);
          const bucket = loose(parts);
          let at = parts.looseCount;
          for (let j = 0; j < elementLength; j++) {
            if (j in element) {
              bucket[at++] = element[j];
            }
          }
          parts.looseCount = at;
        }
      } else {
        loose(parts)[parts.looseCount++] = element;
      }
    }
  }

  replace(
    ArrayProto,
    "flat",
    (original) =>
      ({
        flat(depth) {
          if (this === null || this === undefined) {
            return apply(original, this, [depth]);
          }
          const object = toObject(this);
          const length = lengthOf(object);
          let depthNumber = 1;
          if (depth !== undefined) {
            depthNumber = toIntegerOrInfinity(depth);
            if (depthNumber < 0) {
              depthNumber = 0;
            }
          }
          const target = speciesCreate(object);
          const parts = pieces();
          flatten(parts, "Array.prototype.flat", object, length, depthNumber, undefined, undefined);
          return into(target, join(parts));
        },
      }).flat,
  );

  replace(
    ArrayProto,
    "flatMap",
    (original) =>
      ({
        flatMap(mapper, thisArg) {
          if (this === null || this === undefined) {
            return apply(original, this, [mapper, thisArg]);
          }
          const object = toObject(this);
          const length = lengthOf(object);
          if (typeof mapper !== "function") {
            throw new TypeErrorCtor("flatMap: the mapper is not a function");
          }
          const target = speciesCreate(object);
          const parts = pieces();
          flatten(parts, "Array.prototype.flatMap", object, length, 1, mapper, thisArg);
          return into(target, join(parts));
        },
      }).flatMap,
  );

  // --- Typed arrays: their length is their own, read with the intrinsic getter ----------------

  function typedLength(self) {
    try {
      return apply(typedArrayLength, self, []);
    } catch {
      return 0;
    }
  }

  replace(
    TypedArrayProto,
    "join",
    (original) =>
      ({
        join(...args) {
          const length = typedLength(this);
          if (length > WALK) {
            throw walkLimit("TypedArray.prototype.join", length);
          }
          charge(length);
          return apply(original, this, args);
        },
      }).join,
  );

  // Sorting without a comparator runs in C, n log n comparisons without a time check.
  for (const key of ["sort", "toSorted"]) {
    replace(
      TypedArrayProto,
      key,
      (original) =>
        ({
          [key](...args) {
            const length = typedLength(this);
            if (args[0] === undefined && length > SORT) {
              throw new RangeErrorCtor(
                `TypedArray.prototype.${key} without a comparator would sort ${length} elements, ` +
                  `more than the ${SORT} toolcat lets one call sort (QuickJS cannot stop it ` +
                  `midway): sort at most ${SORT} elements at a time`,
              );
            }
            charge(length);
            return apply(original, this, args);
          },
        })[key],
    );
  }

  // --- Strings: a search for a string of m characters within one of n compares them at every
  // position, up to (n - m + 1) * m comparisons in QuickJS's C loop. Past `SEARCH`, the same
  // search runs in windows of about `CHARGE` comparisons each (a slice of a long string is a
  // view, not a copy), the engine asked between two.

  const stringIndexOf = String.prototype.indexOf;
  const stringLastIndexOf = String.prototype.lastIndexOf;
  const callIndexOf = uncurry(stringIndexOf);
  const callLastIndexOf = uncurry(stringLastIndexOf);
  const callSlice = uncurry(stringSlice);
  const max = Math.max;
  const min = Math.min;
  const floor = Math.floor;

  function costly(text, needle) {
    const m = needle.length;
    return m > 1 && text.length >= m && (text.length - m + 1) * m > SEARCH;
  }

  function windowOf(needle) {
    return max(1, floor(CHARGE / needle.length));
  }

  // The first index at or after `from` where `needle` occurs in `text`, or -1.
  function find(text, needle, from) {
    const n = text.length;
    const m = needle.length;
    const step = windowOf(needle);
    for (let start = from; start + m <= n; start += step) {
      const end = min(n, start + step + m - 1);
      const at = callIndexOf(callSlice(text, start, end), needle);
      if (at !== -1) {
        return start + at;
      }
      charge(step * m);
    }
    return -1;
  }

  // The last index at or before `from` where `needle` occurs in `text`, or -1.
  function findLast(text, needle, from) {
    const m = needle.length;
    const step = windowOf(needle);
    for (let last = min(from, text.length - m); last >= 0;) {
      const first = max(0, last - step + 1);
      const at = callLastIndexOf(callSlice(text, first, last + m), needle);
      if (at !== -1) {
        return first + at;
      }
      charge(step * m);
      last = first - 1;
    }
    return -1;
  }

  function clamp(position, length) {
    const integer = toIntegerOrInfinity(position);
    return integer < 0 ? 0 : integer > length ? length : integer;
  }

  function searchText(self) {
    return typeof self === "string" ? self : `${self}`;
  }

  replace(String.prototype, "indexOf", (original) => {
    const call = uncurry(original);
    return {
      indexOf(search, position) {
        if (this === null || this === undefined) {
          return call(this, search, position);
        }
        const text = typeof this === "string" ? this : `${this}`;
        const needle = typeof search === "string" ? search : `${search}`;
        if (needle.length > 1 && costly(text, needle)) {
          return find(text, needle, clamp(position, text.length));
        }
        owed += text.length;
        if (owed >= CHARGE) {
          settle();
        }
        return call(text, needle, position);
      },
    }.indexOf;
  });

  replace(String.prototype, "includes", (original) => {
    const call = uncurry(original);
    return {
      includes(search, position) {
        if (this === null || this === undefined || isRegExp(search)) {
          return call(this, search, position);
        }
        const text = typeof this === "string" ? this : `${this}`;
        const needle = typeof search === "string" ? search : `${search}`;
        if (needle.length > 1 && costly(text, needle)) {
          return find(text, needle, clamp(position, text.length)) !== -1;
        }
        owed += text.length;
        if (owed >= CHARGE) {
          settle();
        }
        return call(text, needle, position);
      },
    }.includes;
  });

  replace(String.prototype, "lastIndexOf", (original) => {
    const call = uncurry(original);
    return {
      lastIndexOf(search, position) {
        if (this === null || this === undefined) {
          return call(this, search, position);
        }
        const text = searchText(this);
        const needle = typeof search === "string" ? search : `${search}`;
        if (costly(text, needle)) {
          const number = +position;
          const from = number !== number ? text.length : clamp(number, text.length);
          return findLast(text, needle, from);
        }
        charge(text.length);
        return call(text, needle, position);
      },
    }.lastIndexOf;
  });

  // `value[symbol]` on a search or separator that is not a primitive string: a RegExp (or any
  // object with the method) does the work itself, as the original would have it do.
  function ownMethod(value, symbol) {
    if (value === null || value === undefined || typeof value === "string") {
      return undefined;
    }
    const method = value[symbol];
    return method === null ? undefined : method;
  }

  replace(String.prototype, "split", (original) => {
    const call = uncurry(original);
    return {
      split(separator, limit) {
        if (this === null || this === undefined) {
          return apply(original, this, [separator, limit]);
        }
        const splitter = ownMethod(separator, symbolSplit);
        if (splitter !== undefined) {
          return apply(splitter, separator, [this, limit]);
        }
        const text = searchText(this);
        if (separator === undefined) {
          return apply(original, text, [separator, limit]);
        }
        const needle = typeof separator === "string" ? separator : `${separator}`;
        if (!costly(text, needle) || ownMethod(toObjectFunction(needle), symbolSplit)) {
          charge(text.length);
          return call(text, needle, limit);
        }
        const most = limit === undefined ? 2 ** 32 - 1 : limit >>> 0;
        const parts = [];
        if (most === 0) {
          return parts;
        }
        let count = 0;
        let start = 0;
        for (let at = find(text, needle, 0); at !== -1; at = find(text, needle, start)) {
          put(parts, count++, apply(stringSlice, text, [start, at]));
          if (count === most) {
            return parts;
          }
          start = at + needle.length;
        }
        put(parts, count, apply(stringSlice, text, [start]));
        return parts;
      },
    }.split;
  });

  // GetSubstitution for a string search (no captures): `$$`, `$&`, `` $` ``, `$'`; any other
  // `$` stays as it is.
  function substitute(matched, text, position, replacement) {
    let result = "";
    let from = 0;
    for (;;) {
      const at = apply(stringIndexOf, replacement, ["$", from]);
      if (at === -1 || at + 1 >= replacement.length) {
        break;
      }
      result += apply(stringSlice, replacement, [from, at]);
      const next = replacement[at + 1];
      if (next === "$") {
        result += "$";
      } else if (next === "&") {
        result += matched;
      } else if (next === "`") {
        result += apply(stringSlice, text, [0, position]);
      } else if (next === "'") {
        result += apply(stringSlice, text, [position + matched.length]);
      } else {
        result += "$";
        from = at + 1;
        continue;
      }
      from = at + 2;
    }
    return result + apply(stringSlice, replacement, [from]);
  }

  for (const key of ["replace", "replaceAll"]) {
    const all = key === "replaceAll";
    replace(String.prototype, key, (original) => {
      const call = uncurry(original);
      return {
        [key](search, replacement) {
          if (
            this === null ||
            this === undefined ||
            (all && isRegExp(search)) ||
            ownMethod(search, symbolReplace) !== undefined
          ) {
            return call(this, search, replacement);
          }
          const text = searchText(this);
          const needle = typeof search === "string" ? search : `${search}`;
          if (!costly(text, needle) || ownMethod(toObjectFunction(needle), symbolReplace)) {
            charge(text.length);
            return call(text, needle, replacement);
          }
          const functional = typeof replacement === "function";
          const replacementText = functional ? "" : `${replacement}`;
          const positions = [];
          let count = 0;
          for (let at = find(text, needle, 0); at !== -1;) {
            put(positions, count++, at);
            at = all ? find(text, needle, at + needle.length) : -1;
          }
          let result = "";
          let end = 0;
          for (let i = 0; i < count; i++) {
            const at = positions[i];
            result += apply(stringSlice, text, [end, at]);
            result += functional
              ? `${apply(replacement, undefined, [needle, at, text])}`
              : substitute(needle, text, at, replacementText);
            end = at + needle.length;
          }
          return result + apply(stringSlice, text, [end]);
        },
      }[key];
    });
  }

  // --- Regular expressions: compiling one runs in C without a time check, and some patterns
  // take time growing faster than their length (65,536 alternatives: about a second).

  function patternLimit(length) {
    return new RangeErrorCtor(
      `a regular expression of ${length} characters is longer than the ${PATTERN} toolcat ` +
        `compiles (QuickJS cannot stop compiling it midway): match in parts, or look many ` +
        `literal words up in a Set instead of one alternation`,
    );
  }

  // The pattern argument as the RegExp constructor reads it, converted once here.
  function checkedPattern(pattern) {
    if (pattern === undefined || isRegExp(pattern)) {
      return pattern;
    }
    const text = `${pattern}`;
    if (text.length > PATTERN) {
      throw patternLimit(text.length);
    }
    return text;
  }

  const RegExpGuard = new ProxyCtor(RegExpCtor, {
    __proto__: null,
    construct(target, args, newTarget) {
      if (args.length > 0) {
        args[0] = checkedPattern(args[0]);
      }
      return construct(target, args, newTarget);
    },
    apply(target, self, args) {
      const pattern = args[0];
      // `RegExp(re)` is `re` itself when it is a RegExp of this constructor.
      if (args[1] === undefined && isRegExp(pattern) && pattern.constructor === RegExpGuard) {
        return pattern;
      }
      if (args.length > 0) {
        args[0] = checkedPattern(pattern);
      }
      return apply(target, self, args);
    },
  });
  defineProperty(RegExpCtor.prototype, "constructor", {
    __proto__: null,
    value: RegExpGuard,
  });
  defineProperty(globalThis, "RegExp", { __proto__: null, value: RegExpGuard });
  replace(
    RegExpCtor.prototype,
    "compile",
    (original) =>
      ({
        compile(...args) {
          if (args.length > 0) {
            args[0] = checkedPattern(args[0]);
          }
          return apply(original, this, args);
        },
      }).compile,
  );

  // `match`, `matchAll` and `search` make a RegExp of any other argument, with QuickJS's own
  // constructor.
  for (const [key, symbol] of [
    ["match", symbolMatch],
    ["matchAll", symbolMatchAll],
    ["search", symbolSearch],
  ]) {
    replace(
      String.prototype,
      key,
      (original) =>
        ({
          [key](pattern) {
            if (
              this === null ||
              this === undefined ||
              isRegExp(pattern) ||
              ownMethod(pattern, symbol) !== undefined
            ) {
              return apply(original, this, [pattern]);
            }
            const text = pattern === undefined ? pattern : `${pattern}`;
            if (text !== undefined && text.length > PATTERN) {
              throw patternLimit(text.length);
            }
            return apply(original, this, [text]);
          },
        })[key],
    );
  }

  // --- String.raw: its C loop goes on past a failed allocation; the same steps in JavaScript
  // stop at the time limit like any loop.

  replace(
    String,
    "raw",
    () =>
      ({
        raw(template, ...substitutions) {
          const cooked = toObject(template);
          const literals = toObject(cooked.raw);
          const length = toLength(literals.length);
          let text = "";
          for (let i = 0; i < length; i++) {
            text += `${literals[i]}`;
            if (i + 1 < length && i < substitutions.length) {
              text += `${substitutions[i]}`;
            }
          }
          return text;
        },
      }).raw,
  );

  // --- Proxies: QuickJS checks the keys an `ownKeys` trap returns pairwise (for duplicates, and
  // against the target's keys), so the keys a trap may return are bounded.

  function guardedOwnKeys(handler, trap) {
    return function ownKeysGuard(target) {
      const list = apply(trap, handler, [target]);
      if (!isObject(list)) {
        return list;
      }
      const length = toLength(list.length);
      const targetKeys = ownKeys(target).length;
      if (length * (length > targetKeys ? length : targetKeys) > KEYS) {
        throw new RangeErrorCtor(
          `a Proxy's ownKeys trap returned ${length} keys for a target of ${targetKeys}: ` +
            `QuickJS checks them pairwise, which toolcat bounds to ${KEYS} pairs (QuickJS ` +
            `cannot stop it midway): return fewer keys`,
        );
      }
      const copy = [];
      for (let i = 0; i < length; i++) {
        put(copy, i, list[i]);
      }
      return copy;
    };
  }

  function guardedHandler(handler) {
    if (!isObject(handler)) {
      return handler;
    }
    return new ProxyCtor(handler, {
      __proto__: null,
      get(inner, key) {
        const trap = reflectGet(inner, key, inner);
        if (key === "ownKeys" && trap !== undefined && trap !== null) {
          return guardedOwnKeys(inner, trap);
        }
        return trap;
      },
    });
  }

  const ProxyGuard = new ProxyCtor(ProxyCtor, {
    __proto__: null,
    construct(target, args, newTarget) {
      const proxy = construct(target, [args[0], guardedHandler(args[1])], newTarget);
      remember(proxies, proxy);
      return proxy;
    },
  });
  replace(
    ProxyCtor,
    "revocable",
    (original) =>
      ({
        revocable(target, handler) {
          const result = apply(original, ProxyCtor, [target, guardedHandler(handler)]);
          remember(proxies, result.proxy);
          return result;
        },
      }).revocable,
  );
  defineProperty(globalThis, "Proxy", { __proto__: null, value: ProxyGuard });

  // --- Iteration that QuickJS drives in C: `Iterator.prototype.drop` skips elements, and the
  // Set methods walk the other set's `keys()`, without a time check; through an iterator whose
  // `next` is a JavaScript function, each step is one.

  function stepped(iterator) {
    if (!isObject(iterator)) {
      return iterator;
    }
    const step = iterator.next;
    return {
      __proto__: null,
      next:
        typeof step === "function"
          ? function next() {
              return apply(step, iterator, []);
            }
          : step,
      return() {
        const close = iterator.return;
        return close === undefined || close === null
          ? { __proto__: null }
          : apply(close, iterator, []);
      },
    };
  }

  replace(
    getPrototypeOf(getPrototypeOf([][Symbol.iterator]())),
    "drop",
    (original) =>
      ({
        drop(limit) {
          return apply(original, isObject(this) ? stepped(this) : this, [limit]);
        },
      }).drop,
  );

  for (const key of [
    "union",
    "intersection",
    "difference",
    "symmetricDifference",
    "isSupersetOf",
    "isDisjointFrom",
  ]) {
    replace(
      Set.prototype,
      key,
      (original) =>
        ({
          [key](other) {
            if (!isObject(other)) {
              return apply(original, this, [other]);
            }
            const size = +other.size;
            const otherHas = other.has;
            const otherKeys = other.keys;
            const record = {
              __proto__: null,
              size,
              has:
                typeof otherHas === "function"
                  ? function has(value) {
                      return apply(otherHas, other, [value]);
                    }
                  : otherHas,
              keys:
                typeof otherKeys === "function"
                  ? function keys() {
                      return stepped(apply(otherKeys, other, []));
                    }
                  : otherKeys,
            };
            return apply(original, this, [record]);
          },
        })[key],
    );
  }

  // --- JSON.stringify walks an array replacer in C.

  replace(
    JSON,
    "stringify",
    (original) =>
      ({
        stringify(value, replacer, space) {
          if (isObject(replacer) && typeof replacer !== "function" && isArray(replacer)) {
            const length = lengthOf(replacer);
            if (length > WALK) {
              throw walkLimit("JSON.stringify's replacer array", length);
            }
            if (!isRealArray(replacer)) {
              const copy = [];
              for (let i = 0; i < length; i++) {
                put(copy, i, replacer[i]);
              }
              replacer = copy;
            }
          }
          const text = apply(original, this, [value, replacer, space]);
          if (typeof text === "string") {
            charge(text.length);
          }
          return text;
        },
      }).stringify,
  );

  // --- Built-ins whose cost grows with their input, which are not bounded but counted: a loop
  // of them is stopped between two calls once the time is up.

  function size(value) {
    if (typeof value === "string") {
      return value.length;
    }
    if (isRealArray(value)) {
      return value.length;
    }
    return 0;
  }

  // `measure(self, a)` is the work before the call; the result's size is counted after it.
  // `fixed` methods treat an argument passed as `undefined` as one not passed.
  function counted(object, keys, measure, fixed) {
    for (const key of keys) {
      replace(object, key, (original) => {
        const call = uncurry(original);
        return fixed
          ? {
              [key](a, b, c) {
                owed += measure(this, a);
                if (owed >= CHARGE) {
                  settle();
                }
                const result = call(this, a, b, c);
                owed += typeof result === "string" ? result.length : size(result);
                if (owed >= CHARGE) {
                  settle();
                }
                return result;
              },
            }[key]
          : {
              [key](...args) {
                charge(measure(this, args[0]));
                const result = apply(original, this, args);
                charge(size(result));
                return result;
              },
            }[key];
      });
    }
  }

  const nothing = () => 0;
  const text = (self, a) =>
    (typeof self === "string" ? self.length : 0) + (typeof a === "string" ? a.length : 0);

  counted(
    String.prototype,
    [
      "toLowerCase",
      "toUpperCase",
      "toLocaleLowerCase",
      "toLocaleUpperCase",
      "normalize",
      "localeCompare",
      "trim",
      "trimStart",
      "trimEnd",
      "padStart",
      "padEnd",
      "repeat",
      "isWellFormed",
      "toWellFormed",
    ],
    text,
    true,
  );
  counted(ArrayProto, ["toReversed", "toSorted", "with"], size, true);
  counted(ArrayProto, ["toSpliced"], size, false);
  counted(
    TypedArrayProto,
    ["slice", "fill", "set", "copyWithin", "reverse", "toReversed", "with", "indexOf", "includes"],
    typedLength,
    true,
  );
  counted(TypedArrayProto, ["lastIndexOf"], typedLength, false);
  counted(JSON, ["parse"], (self, a) => (typeof a === "string" ? a.length : 0), true);
  counted(Object, ["keys", "values", "entries", "getOwnPropertyNames"], nothing, true);
  counted(Reflect, ["ownKeys"], nothing, true);
  counted(Array, ["from"], nothing, true);
});
