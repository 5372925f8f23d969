"""course_lib: the reference engine of *Automatic Differentiation from Scratch*.

Modules, in the order the course builds them:

- ``check``      finite differences and gradient checking
- ``toposort``   topological orders shared by every engine
- ``graph``      an explicit computational graph with forward and reverse sweeps
- ``forward``    forward mode with (tagged) dual numbers
- ``scalar``     ``Value``: a reverse-mode scalar engine with operator overloading
- ``viz``        graphviz drawings of graphs
- ``tensor``     ``Tensor``: a NumPy reverse-mode engine with a VJP table
- ``functional`` grad, vjp, jvp, jacobian, hessian
- ``nn``         Linear, MLP, cross-entropy, SGD
- ``datasets``   the Iris data, shipped with the package
- ``ig``         Integrated Gradients
- ``physics``    a differentiable projectile
"""

__version__ = "0.4.0"
